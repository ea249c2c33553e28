/* inplace dashboard: four pages over server-sent event streams, charts with uPlot.
 *
 * No build step and no dependency but the vendored uPlot. Each page opens one EventSource
 * (/api/stream?view=...) and redraws from what it receives; nothing ever reloads the page.
 * Units from the server: CPU in millicores, memory in bytes, times in Unix seconds; null is
 * "not set". window.inplaceDashboard exposes the live charts and rows (tests read them).
 */
"use strict";
(() => {
  const main = document.getElementById("main");
  const connection = document.getElementById("connection");
  const exposed = { page: "", charts: {}, rows: null, updates: 0, lastUpdate: 0, drawMs: [] };
  window.inplaceDashboard = exposed;
  let teardown = () => {};

  // -- formatting -------------------------------------------------------------------------

  const esc = (value) =>
    String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

  function fmtCpu(milli) {
    if (milli === null || milli === undefined || Number.isNaN(milli)) return "—";
    if (milli >= 1000) return `${+(milli / 1000).toFixed(milli % 1000 ? 2 : 0)}`;
    return `${+milli.toFixed(milli < 10 ? 1 : 0)}m`;
  }

  function fmtMem(bytes) {
    if (bytes === null || bytes === undefined || Number.isNaN(bytes)) return "—";
    const units = ["", "Ki", "Mi", "Gi", "Ti"];
    let value = bytes;
    let i = 0;
    while (Math.abs(value) >= 1024 && i < units.length - 1) { value /= 1024; i++; }
    const digits = value >= 100 || Number.isInteger(value) ? 0 : 1;
    return `${+value.toFixed(digits)}${units[i]}`;
  }

  const fmtFor = (resource) => (resource === "cpu" ? fmtCpu : fmtMem);

  function fmtTime(seconds) {
    if (!seconds) return "—";
    return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
  }

  function fmtAgo(seconds, now) {
    if (!seconds) return "—";
    const d = Math.max(0, Math.round((now || Date.now() / 1000) - seconds));
    if (d < 120) return `${d}s`;
    if (d < 7200) return `${Math.round(d / 60)}m`;
    return `${Math.round(d / 3600)}h`;
  }

  // A name in a table: whole while the window has room for it (the table gives it that
  // room), cut with an ellipsis beyond, its whole text then on hover.
  const named = (text) => `<span class="name" title="${esc(text)}">${esc(text)}</span>`;
  const namedLink = (href, text) => `<a class="name" href="${href}" title="${esc(text)}">${esc(text)}</a>`;

  // Facts side by side: a line breaks between them, not inside one.
  const inParts = (parts) => parts.map((p) => `<span class="part">${esc(p)}</span>`).join(" · ");

  const podHref = (ns, name) => `#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;

  // -- streams ----------------------------------------------------------------------------

  function setConnection(text, live) {
    connection.textContent = text;
    connection.classList.toggle("live", live === true);
    connection.classList.toggle("down", live === false);
  }

  function stream(params, handlers) {
    const source = new EventSource(`/api/stream?${new URLSearchParams(params)}`);
    source.onopen = () => setConnection("live", true);
    source.onerror = () => setConnection(
      source.readyState === EventSource.CLOSED
        ? "refused: open the dashboard's URL (with its token) again"
        : "reconnecting…",
      false,
    );
    for (const [event, handle] of Object.entries(handlers)) {
      source.addEventListener(event, (message) => {
        const data = JSON.parse(message.data);
        exposed.updates += 1;
        exposed.lastUpdate = Date.now();
        setConnection(`live · updated ${new Date().toLocaleTimeString([], { hour12: false })}`, true);
        handle(data);
      });
    }
    return source;
  }

  function missingKinds(meta) {
    const missing = Object.entries(meta.synced || {}).filter(([, ok]) => !ok).map(([k]) => k);
    const notes = [];
    if (missing.length) notes.push(`not (yet) readable from the API: ${missing.join(", ")}`);
    if (meta.metrics === false) notes.push(`no usage: metrics.k8s.io is not available (${meta.metricsError})`);
    return notes.join(" · ");
  }

  // -- cluster ----------------------------------------------------------------------------

  function bar(label, fmt, allocatable, requested, used) {
    const total = allocatable || Math.max(requested || 0, used || 0, 1);
    const pct = (v) => `${Math.max(0, Math.min(100, (100 * v) / total)).toFixed(2)}%`;
    const req = requested || 0;
    const use = used ?? 0;
    const inside = Math.min(use, req);
    const reserved = Math.max(0, req - use);
    const over = Math.max(0, use - req);
    const parts = [`used ${used === null ? "—" : fmt(used)}`, `requested ${fmt(req)}`, `allocatable ${fmt(allocatable)}`];
    const text = parts.join(" · ");
    return `<div class="bar" role="img" aria-label="${esc(label)}: ${esc(text)}">` +
      `<span class="used" style="width:${pct(inside)}"></span>` +
      `<span class="reserved" style="width:${pct(reserved)}"></span>` +
      `<span class="over" style="width:${pct(over)}"></span></div>` +
      `<div class="bar-text">${inParts(parts)}</div>`;
  }

  function clusterPage() {
    main.innerHTML = `
      <h1 tabindex="-1">Cluster</h1>
      <p class="note" id="cluster-note"></p>
      <h2 id="nodes-h">Nodes</h2>
      <div class="legend" aria-hidden="true"><span><i style="background:var(--usage)"></i>used (within requests)</span>
        <span><i style="background:var(--request)"></i>requested, not used</span>
        <span><i style="background:var(--over)"></i>used above requests</span>
        <span><i style="background:var(--free)"></i>free</span></div>
      <table aria-labelledby="nodes-h" id="nodes"><thead><tr>
        <th scope="col">Node</th><th scope="col">Ready</th><th scope="col" class="num">Pods</th>
        <th scope="col">CPU</th><th scope="col">Memory</th></tr></thead><tbody></tbody></table>
      <h2 id="waiting-h">Pods waiting</h2>
      <table aria-labelledby="waiting-h" id="waiting"><thead><tr>
        <th scope="col">Pod</th><th scope="col">Waiting for</th><th scope="col">Reason</th>
        <th scope="col">Message</th><th scope="col">Since</th></tr></thead><tbody></tbody></table>`;
    const nodes = main.querySelector("#nodes tbody");
    const waiting = main.querySelector("#waiting tbody");
    const source = stream({ view: "cluster" }, {
      cluster(view) {
        main.querySelector("#cluster-note").textContent = missingKinds(view.meta);
        nodes.innerHTML = view.nodes.map((n) => `<tr>
          <th scope="row">${named(n.name)}${n.simulated ? ' <span class="badge">simulated</span>' : ""}${n.unschedulable ? ' <span class="badge">cordoned</span>' : ""}</th>
          <td>${esc(n.ready)}</td><td class="num">${n.pods}</td>
          <td>${bar(`CPU of ${n.name}`, fmtCpu, n.cpu.allocatable, n.cpu.requested, n.cpu.used)}</td>
          <td>${bar(`Memory of ${n.name}`, fmtMem, n.memory.allocatable, n.memory.requested, n.memory.used)}</td>
        </tr>`).join("") || `<tr><td colspan="5" class="note">no nodes</td></tr>`;
        waiting.innerHTML = view.waiting.map((w) => `<tr>
          <th scope="row">${namedLink(podHref(w.namespace, w.name), w.key)}</th>
          <td>${esc(w.for)}</td><td><span class="badge ${esc(w.reason)}">${esc(w.reason)}</span></td>
          <td>${esc(w.message)}</td><td>${fmtAgo(w.since, view.meta.now)}</td></tr>`).join("") ||
          `<tr><td colspan="5" class="note">no pod is waiting</td></tr>`;
      },
    });
    return () => source.close();
  }

  // -- pods -------------------------------------------------------------------------------

  // A sparkline is SPARK_WIDTH wide while the table has room, down to SPARK_MIN when it has not
  // (stretched, not scaled: its lines keep their thickness).
  const SPARK_WIDTH = 84;
  const SPARK_MIN = 36;

  function spark(points, times, request, limit, label, fmt) {
    const w = SPARK_WIDTH, h = 20;
    if (!points || points.length === 0) return `<span class="note">—</span>`;
    const top = Math.max(limit || 0, request || 0, ...points) * 1.08 || 1;
    const t0 = times[0], t1 = times[times.length - 1];
    const x = (t) => (t1 > t0 ? ((t - t0) / (t1 - t0)) * (w - 2) + 1 : w - 1);
    const y = (v) => (h - 1 - (v / top) * (h - 2)).toFixed(1);
    const line = points.map((v, i) => `${x(times[i]).toFixed(1)},${y(v)}`).join(" ");
    const ref = (v, cls) => (v ? `<line class="${cls}" x1="0" x2="${w}" y1="${y(v)}" y2="${y(v)}"/>` : "");
    const now = points[points.length - 1];
    const aria = `${label} over the last ${Math.round((t1 - t0) / 60)} minutes: ${fmt(now)} now` +
      (request ? `, request ${fmt(request)}` : "") + (limit ? `, limit ${fmt(limit)}` : "");
    const end = `x1="${x(t1).toFixed(1)}" x2="${x(t1).toFixed(1)}" y1="${y(now)}" y2="${y(now)}"`;
    return `<svg class="spark" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" role="img" aria-label="${esc(aria)}">` +
      `${ref(request, "request")}${ref(limit, "limit")}<polyline points="${line}"/><line class="now" ${end}/></svg>`;
  }

  // The pods table's columns: header, sort key, what a cell says (its title too: the whole
  // text when the column is too narrow for it) and what decides its width. `tier`: who gets
  // room first when there is not enough (see podColumns): 1 the names (the pod, its
  // namespace, its node) and the states, 2 the QoS class and the policy, 3 the sparklines'
  // full width, 4 the owner (mostly the pod's name without its suffix). Numbers are never
  // cut. `spark`: a sparkline follows the number.
  const POD_COLUMNS = [
    { id: "namespace", title: "Name\u00adspace", sort: (r) => r.namespace, text: (r) => r.namespace, tier: 1, wrap: true },
    { id: "name", title: "Name", sort: (r) => r.name, text: (r) => r.name, tier: 1, bold: true, wrap: true },
    { id: "owner", title: "Owner", sort: (r) => r.owner, text: (r) => r.owner, tier: 4 },
    { id: "node", title: "Node", sort: (r) => r.node, text: (r) => r.node, tier: 1, wrap: true },
    { id: "status", title: "Status", sort: (r) => r.status, text: (r) => r.status, tier: 1 },
    { id: "qos", title: "QoS", sort: (r) => r.qos, text: (r) => r.qos, tier: 2 },
    { id: "cpuRequest", title: "CPU req\u00a0/\u00a0lim", sort: (r) => r.cpu.request ?? -1, num: true,
      text: (r) => `${fmtCpu(r.cpu.request)} / ${fmtCpu(r.cpu.limit)}` },
    { id: "cpuUsage", title: "CPU usage", sort: (r) => r.cpu.usage ?? -1, num: true, tier: 3,
      text: (r) => fmtCpu(r.cpu.usage), spark: (r) => r.spark.cpu?.length > 0 },
    { id: "memoryRequest", title: "Memory req\u00a0/\u00a0lim", sort: (r) => r.memory.request ?? -1, num: true,
      text: (r) => `${fmtMem(r.memory.request)} / ${fmtMem(r.memory.limit)}` },
    { id: "memoryUsage", title: "Memory usage", sort: (r) => r.memory.usage ?? -1, num: true, tier: 3,
      text: (r) => fmtMem(r.memory.usage), spark: (r) => r.spark.memory?.length > 0 },
    { id: "restarts", title: "Re\u00adstarts", sort: (r) => r.restarts, num: true, text: (r) => String(r.restarts) },
    { id: "resize", title: "Resize", sort: (r) => r.resize + (r.paused ? " Paused" : ""), tier: 1, badges: true,
      text: (r) => [r.resize, r.paused ? "Paused" : ""].filter(Boolean).join(" ") },
    { id: "policy", title: "Policy", sort: (r) => r.policy, text: (r) => r.policy, tier: 2 },
  ];

  function podCells(r) {
    const [ns, name, owner, node, status, qos] = POD_COLUMNS.slice(0, 6).map((c) => esc(c.text(r)));
    const resize = [r.resize ? `<span class="badge ${esc(r.resize)}" title="${esc(r.resizeMessage)}">${esc(r.resize)}</span>` : "",
      r.paused ? `<span class="badge Paused">Paused</span>` : ""].join(" ");
    return `<td role="cell" class="whole" title="${ns}">${ns}</td>
      <th scope="row" role="rowheader" class="whole" title="${name}"><a href="${podHref(r.namespace, r.name)}">${name}</a></th>
      <td role="cell" title="${owner}">${owner}</td><td role="cell" class="whole" title="${node}">${node}</td><td role="cell" title="${status}">${status}</td><td role="cell" title="${qos}">${qos}</td>
      <td role="cell" class="num">${fmtCpu(r.cpu.request)} / ${fmtCpu(r.cpu.limit)}</td>
      <td role="cell" class="num usage"><span>${fmtCpu(r.cpu.usage)}</span>${spark(r.spark.cpu, r.spark.t, r.cpu.request, r.cpu.limit, "CPU", fmtCpu)}</td>
      <td role="cell" class="num">${fmtMem(r.memory.request)} / ${fmtMem(r.memory.limit)}</td>
      <td role="cell" class="num usage"><span>${fmtMem(r.memory.usage)}</span>${spark(r.spark.memory, r.spark.t, r.memory.request, r.memory.limit, "Memory", fmtMem)}</td>
      <td role="cell" class="num">${r.restarts}</td><td role="cell">${resize}</td><td role="cell" title="${esc(r.policy)}">${esc(r.policy)}</td>`;
  }

  // -- column widths ----------------------------------------------------------------------
  // The pods table's rows are grids (see app.css), so the browser cannot size its columns to
  // their content: they are sized here, from the content. Text is measured on a canvas (no
  // layout, no reflow), each string once per column; the widths go into one CSS variable.

  const ruler = document.createElement("canvas").getContext("2d");
  let rulerFont = "";
  function textWidth(text, font) {
    if (font !== rulerFont) {
      ruler.font = font;
      rulerFont = font;
    }
    return ruler.measureText(text).width;
  }

  /* Shares `available` pixels among columns: each gets its floor, then `stages` (each a
   * width per column, null for none) are met in turn. Within a stage the narrowest columns
   * grow first (so the shorter texts are whole first, and the longest are cut to one common
   * width). Room left over is shared in proportion to `wants`, as a table shares it. Below the
   * sum of the floors, the table is wider than its place. */
  function shareColumns(floors, stages, wants, available) {
    const widths = floors.slice();
    let left = available - widths.reduce((a, b) => a + b, 0);
    for (const targets of stages) {
      let open = widths.map((_, i) => i).filter((i) => targets[i] > widths[i]);
      while (left > 0.01 && open.length) {
        const low = Math.min(...open.map((i) => widths[i]));
        const lowest = open.filter((i) => widths[i] < low + 0.01);
        const above = open.filter((i) => widths[i] >= low + 0.01).map((i) => widths[i]);
        const next = Math.min(...above, ...lowest.map((i) => targets[i]));
        const step = Math.min(next - low, left / lowest.length);
        for (const i of lowest) widths[i] += step;
        left -= step * lowest.length;
        open = open.filter((i) => widths[i] < targets[i] - 0.01);
      }
    }
    if (left > 0) {
      const total = wants.reduce((a, b) => a + b, 0);
      for (let i = 0; i < widths.length; i++) widths[i] += (left * wants[i]) / total;
    }
    return widths.map((w) => Math.floor(w * 100) / 100);
  }
  exposed.shareColumns = shareColumns;

  /* Sizes the pods table's columns to its rows and its width, whenever either changes:
   * returns update(rows, sortedColumn), to call when the rows or the sort change. */
  function podColumns(table) {
    const style = getComputedStyle(table.querySelector("thead th"));
    const family = style.fontFamily;
    const size = style.fontSize;
    const fonts = { normal: `400 ${size} ${family}`, bold: `600 ${size} ${family}`, badge: `400 12px ${family}` };
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) + 2;  // +2: rounding
    const space = textWidth(" ", fonts.normal);
    const gap = 4;  // between a number and its sparkline (app.css)
    const badge = 2 * 6 + 2;  // a badge's padding and border (app.css)
    // a header wraps between its words (and at a soft hyphen: Name-space); the sorted
    // column's keeps room for its arrow
    const hyphen = textWidth("-", fonts.bold);
    const headerWant = (c, sorted) => {
      const words = c.title.split(" ").map((word) => {
        const pieces = word.split("\u00ad");
        return Math.max(...pieces.map((p, i) => textWidth(p, fonts.bold) + (i < pieces.length - 1 ? hyphen : 0)));
      });
      words[words.length - 1] += sorted ? textWidth(" ▲", fonts.bold) : 0;
      return Math.max(...words);
    };
    const known = POD_COLUMNS.map(() => new Map());  // per column: text → its width
    const measure = (i, text) => {
      let width = known[i].get(text);
      if (width === undefined) {
        const c = POD_COLUMNS[i];
        if (!c.badges) width = textWidth(text, c.bold ? fonts.bold : fonts.normal);
        else width = text ? text.split(" ").reduce((sum, w) => sum + textWidth(w, fonts.badge) + badge + space, -space) : 0;
        if (known[i].size > 10000) known[i].clear();
        known[i].set(text, width);
      }
      return width;
    };
    const n = POD_COLUMNS.length;
    const cellWidths = (r) => {  // each column's want, then each column's floor
      const widths = new Float64Array(2 * n);
      for (let i = 0; i < n; i++) {
        const c = POD_COLUMNS[i];
        const text = c.text(r);
        const width = measure(i, text);
        const spark = c.spark && c.spark(r);
        widths[i] = spark ? width + gap + SPARK_WIDTH : width;
        // a name wraps after its hyphens rather than being cut: its floor is its longest piece
        widths[n + i] = spark ? width + gap + SPARK_MIN
          : c.wrap ? Math.max(0, ...text.split(/(?<=-)/).map((piece) => measure(i, piece))) : width;
      }
      return widths;
    };
    const perRow = new WeakMap();  // a row's object is replaced when its pod changes
    let wants = null;
    let floors = null;
    let headers = null;
    let available = 0;
    let template = "";
    const seen = { template, changes: 0, ms: 0 };  // read by the tests and the benchmark
    exposed.podColumns = seen;

    // Who gets room first: the names and states (tier 1) whole, then the other columns'
    // headers, then each tier in turn.
    function apply() {
      if (!available || !wants) return;
      // numbers change often: their columns grow and shrink by 4 px, to be laid out less often
      const round = (w, c) => (c.num ? Math.ceil((w + padding) / 4) * 4 : Math.ceil(w + padding));
      const full = wants.map((w, i) => round(w, POD_COLUMNS[i]));
      const least = POD_COLUMNS.map((c, i) =>
        c.num ? round(floors[i], c) : c.wrap ? Math.min(full[i], round(floors[i], c)) : Math.min(full[i], 40));
      const titled = headers.map((w, i) => Math.min(full[i], round(w, POD_COLUMNS[i])));
      const stages = [
        POD_COLUMNS.map((c, i) => (c.tier === 1 ? full[i] : null)),
        POD_COLUMNS.map((c, i) => (c.tier > 1 && !c.num ? titled[i] : null)),
        POD_COLUMNS.map((c, i) => (c.tier === 2 ? full[i] : null)),
        POD_COLUMNS.map((c, i) => (c.tier === 3 ? full[i] : null)),
        POD_COLUMNS.map((c, i) => (c.tier === 4 ? full[i] : null)),
      ];
      const next = shareColumns(least, stages, full, available).map((w) => `${w}px`).join(" ");
      if (next !== template) {
        template = next;
        table.style.setProperty("--pod-columns", template);
        Object.assign(seen, { wants: full, floors: least, available, template, changes: seen.changes + 1 });
      }
    }

    const observer = new ResizeObserver((entries) => {
      available = entries[entries.length - 1].contentRect.width;
      apply();
    });
    observer.observe(table);

    function update(rows, sorted) {
      const began = performance.now();
      headers = POD_COLUMNS.map((c) => headerWant(c, c.id === sorted));
      const most = headers.slice();
      const least = headers.slice();
      for (const r of rows) {
        let widths = perRow.get(r);
        if (!widths) {
          widths = cellWidths(r);
          perRow.set(r, widths);
        }
        for (let i = 0; i < n; i++) {
          if (widths[i] > most[i]) most[i] = widths[i];
          if (widths[n + i] > least[i]) least[i] = widths[n + i];
        }
      }
      wants = most;
      floors = least;
      apply();
      seen.ms = performance.now() - began;
    }
    update.stop = () => observer.disconnect();
    return update;
  }

  function podsPage(query) {
    const params = new URLSearchParams(query);
    main.innerHTML = `
      <h1 tabindex="-1">Pods</h1>
      <form class="filters" id="pod-filters" role="search" aria-label="Filter pods">
        <label>Namespace<select name="namespace"><option value="">all</option></select></label>
        <label>Labels (selector)<input name="labels" placeholder="app=web,tier!=db" size="24"></label>
        <label>State<select name="state"><option value="">any</option>
          ${["Running", "Pending", "Resizing", "Proposed", "InProgress", "Deferred", "Infeasible", "Error", "Paused"].map((s) => `<option>${s}</option>`).join("")}
        </select></label>
        <label>Name contains<input name="q" size="16"></label>
      </form>
      <p role="alert" class="error" id="pods-error"></p>
      <p class="note" id="pods-count" aria-live="polite"></p>
      <table id="pods" role="table"><caption>Usage sparklines cover the last 10 minutes; dashed lines are the request (green) and the limit (red).</caption>
        <thead role="rowgroup"><tr role="row">${POD_COLUMNS.map((c) => `<th scope="col" role="columnheader" data-col="${c.id}" title="${c.title.replace(/\u00ad/g, "")}"${c.num ? ' class="num"' : ""}><button type="button">${c.title}</button></th>`).join("")}</tr></thead>
        <tbody role="rowgroup"></tbody></table>`;
    const form = main.querySelector("#pod-filters");
    for (const [k, v] of params) if (form.elements[k]) form.elements[k].value = v;
    const tbody = main.querySelector("#pods tbody");
    const count = main.querySelector("#pods-count");
    const sizeColumns = podColumns(main.querySelector("#pods"));
    const rows = new Map();
    const trs = new Map();
    let sort = { col: params.get("sort") || "name", dir: params.get("dir") === "desc" ? -1 : 1 };
    let meta = { total: 0 };
    let source = null;
    let pending = false;
    const dirty = new Set();
    let full = true;
    let reorder = false;
    let measure = true;  // the columns' widths may have to follow the rows
    exposed.rows = rows;

    const headers = main.querySelectorAll("#pods th[data-col]");
    function showSort() {
      headers.forEach((th) => {
        if (th.dataset.col === sort.col) th.setAttribute("aria-sort", sort.dir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
    }
    headers.forEach((th) => th.querySelector("button").addEventListener("click", () => {
      sort = { col: th.dataset.col, dir: sort.col === th.dataset.col ? -sort.dir : 1 };
      showSort();
      reorder = true;
      measure = true;
      schedule(true);
    }));
    showSort();

    function ordered() {
      const key = (POD_COLUMNS.find((c) => c.id === sort.col) || POD_COLUMNS[1]).sort;
      return [...rows.values()].sort((a, b) => {
        const x = key(a), y = key(b);
        if (x < y) return -sort.dir;
        if (x > y) return sort.dir;
        return a.key < b.key ? -1 : 1;
      });
    }

    // Drawing is sliced into frames of ~12 ms, so a live update of 1,000 rows never blocks
    // typing, scrolling or a click for long: rows first, then their order.
    function draw() {
      const began = performance.now();
      pending = false;
      if (measure) {  // before the rows are laid out
        measure = false;
        sizeColumns(rows.values(), sort.col);
      }
      if (full) {
        const list = ordered();
        tbody.innerHTML = list.map((r) => `<tr role="row" data-key="${esc(r.key)}">${podCells(r)}</tr>`).join("");
        trs.clear();
        tbody.querySelectorAll("tr").forEach((tr, i) => trs.set(list[i].key, tr));
        full = false;
        reorder = false;
        dirty.clear();
      } else {
        for (const key of dirty) {
          dirty.delete(key);
          const r = rows.get(key);
          let tr = trs.get(key);
          if (!r) { if (tr) tr.remove(); trs.delete(key); continue; }
          if (!tr) {
            tr = document.createElement("tr");
            tr.setAttribute("role", "row");
            tr.dataset.key = key;
            trs.set(key, tr);
            reorder = true;
          }
          tr.innerHTML = podCells(r);
          if (performance.now() - began > 12) break;
        }
        if (dirty.size) {
          schedule(true);  // the rest in the next frame
        } else if (reorder) {
          reorder = false;
          let previous = null;
          for (const r of ordered()) {  // move only what is out of place
            const tr = trs.get(r.key);
            const expected = previous ? previous.nextSibling : tbody.firstChild;
            if (tr !== expected) tbody.insertBefore(tr, expected);
            previous = tr;
          }
        }
      }
      exposed.drawMs.push(performance.now() - began);  // read by bench/dashboard_bench.py
      if (exposed.drawMs.length > 200) exposed.drawMs.shift();
      exposed.drawing = dirty.size > 0;
      count.textContent = `${rows.size} of ${meta.total} pods` + (missingKinds(meta) ? ` · ${missingKinds(meta)}` : "");
      const ns = form.elements.namespace;
      const chosen = ns.value;
      const options = ["", ...(meta.namespaces || [])];
      if (ns.options.length !== options.length) {
        ns.innerHTML = options.map((n) => `<option value="${esc(n)}">${n ? esc(n) : "all"}</option>`).join("");
        ns.value = chosen;
      }
    }

    function schedule(onlyChanged) {
      if (!onlyChanged) full = true;
      if (!pending) { pending = true; requestAnimationFrame(draw); }
    }

    function connect() {
      if (source) source.close();
      const filters = Object.fromEntries(new FormData(form));
      for (const k of Object.keys(filters)) if (!filters[k]) delete filters[k];
      const sortParams = sort.col !== "name" ? { sort: sort.col, dir: sort.dir > 0 ? "asc" : "desc" } : {};
      history.replaceState(null, "", `#/pods${Object.keys(filters).length ? `?${new URLSearchParams({ ...filters, ...sortParams })}` : ""}`);
      main.querySelector("#pods-error").textContent = "";
      source = stream({ view: "pods", ...filters }, {
        snapshot(data) {
          rows.clear();
          for (const r of data.rows) rows.set(r.key, r);
          meta = data.meta;
          measure = true;
          schedule(false);
        },
        delta(data) {
          for (const r of data.upsert) { rows.set(r.key, r); dirty.add(r.key); }
          for (const key of data.delete) { rows.delete(key); dirty.add(key); }
          meta = data.meta;
          reorder = true;
          measure = true;
          schedule(true);
        },
      });
      source.addEventListener("error", () => {  // refused (not a lost connection): say why
        if (source.readyState !== EventSource.CLOSED) return;
        fetch(`/api/view?${new URLSearchParams({ view: "pods", ...filters })}`).then(async (r) => {
          if (r.status === 400) { main.querySelector("#pods-error").textContent = (await r.json()).error; source.close(); }
        }).catch(() => {});
      });
    }

    let typing = 0;
    form.addEventListener("input", (e) => {
      clearTimeout(typing);
      typing = setTimeout(connect, e.target.tagName === "INPUT" ? 300 : 0);
    });
    form.addEventListener("submit", (e) => { e.preventDefault(); connect(); });
    connect();
    return () => { if (source) source.close(); sizeColumns.stop(); exposed.rows = null; };
  }

  // -- one pod ----------------------------------------------------------------------------

  const MARKER_COLORS = {
    "resize-started": "#0969da",
    "resize-completed": "#1a7f37",
    "resize-deferred": "#bf8700",
    "resize-infeasible": "#cf222e",
    "resize-error": "#a40e26",
    paused: "#953800",
    "oom-killed": "#82071e",
    restarted: "#bc4c00",
    preempted: "#57606a",
    moved: "#116329",
  };
  const MARKER_LABELS = {
    "resize-started": "resize started",
    "resize-completed": "resize completed",
    "resize-deferred": "resize deferred",
    "resize-infeasible": "resize infeasible",
    "resize-error": "resize error",
    paused: "paused at memory limit",
    "oom-killed": "OOM killed",
    restarted: "restarted",
    preempted: "preempted",
    moved: "moved (evicted to resize)",
  };

  // memory ticks at binary sizes (64Mi, 128Mi...), as requests and limits are usually written
  const MEMORY_STEPS = Array.from({ length: 35 }, (_, i) => 2 ** (i + 10));  // 1Ki .. 16Ti

  const PAUSE_FILL = "rgba(149, 56, 0, 0.16)";

  function markersPlugin(box) {
    return {
      hooks: {
        drawClear: [(u) => {
          // pauses: shaded intervals under the series
          const ctx = u.ctx;
          const [x0, x1] = [u.scales.x.min, u.scales.x.max];
          ctx.save();
          ctx.fillStyle = PAUSE_FILL;
          for (const [start, end] of box.pauses) {
            const a = Math.max(start, x0), b = Math.min(end ?? box.now, x1);
            if (b <= a) continue;
            const left = u.valToPos(a, "x", true), right = u.valToPos(b, "x", true);
            ctx.fillRect(left, u.bbox.top, Math.max(right - left, 2), u.bbox.height);
          }
          ctx.restore();
        }],
        draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          for (const m of box.markers) {
            if (m.at < u.scales.x.min || m.at > u.scales.x.max) continue;
            const x = Math.round(u.valToPos(m.at, "x", true)) + 0.5;
            ctx.strokeStyle = MARKER_COLORS[m.kind] || "#57606a";
            ctx.fillStyle = ctx.strokeStyle;
            ctx.lineWidth = m.kind === "oom-killed" ? 3 : 1.5;
            ctx.setLineDash(m.kind === "resize-started" ? [4, 3] : []);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.beginPath();
            ctx.arc(x, u.bbox.top + 5, 4, 0, 2 * Math.PI);
            ctx.fill();
          }
          ctx.restore();
        }],
      },
    };
  }

  function chartData(c, resource) {
    const s = c[resource];
    return [c.t, s.request, s.limit, s.allocated, s.lower, s.target, s.upper, s.usage];
  }

  // uPlot is loaded by the pod page only: the other pages draw no chart.
  let chartsLoaded = null;
  function loadCharts() {
    chartsLoaded ||= new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/static/vendor/uplot/uPlot.iife.min.js";
      script.onload = resolve;
      script.onerror = reject;
      document.head.appendChild(script);
    });
    return chartsLoaded;
  }

  function makeChart(target, resource, box, width, view) {
    const fmt = fmtFor(resource);
    const stepped = uPlot.paths.stepped({ align: 1 });
    const css = getComputedStyle(document.documentElement);
    const color = (name) => css.getPropertyValue(name).trim();
    return new uPlot({
      width,
      height: 220,
      plugins: [markersPlugin(box)],
      cursor: { drag: { x: true, y: false } },
      // a drag zooms in; live data then keeps that zoom until a double-click zooms out
      hooks: { setSelect: [(u) => { if (u.select.width > 0) view.zoomed = true; }] },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 1)] } },
      axes: [
        { stroke: color("--muted"), grid: { stroke: color("--line") } },
        {
          stroke: color("--muted"), grid: { stroke: color("--line") }, size: 60, values: (u, ticks) => ticks.map(fmt),
          ...(resource === "memory" ? { incrs: MEMORY_STEPS } : {}),
        },
      ],
      series: [
        {},
        { label: "request", stroke: color("--request"), width: 1.5, paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        { label: "limit", stroke: color("--limit"), width: 1.5, paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        { label: "allocated", stroke: color("--allocated"), width: 1.2, dash: [6, 4], paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        { label: "VPA lower", stroke: color("--vpa"), width: 0.8, dash: [2, 3], paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        { label: "VPA target", stroke: color("--vpa"), width: 1.4, dash: [8, 4], paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        { label: "VPA upper", stroke: color("--vpa"), width: 0.8, dash: [2, 3], paths: stepped, points: { show: false }, value: (u, v) => fmt(v) },
        // usage last, so it is drawn on top (a paused pod's usage sits on its limit)
        {
          label: "usage", stroke: color("--usage"), width: 1.8, spanGaps: true, value: (u, v) => fmt(v),
          points: { show: (u, si, i0, i1) => i1 - i0 < 40, size: 5, fill: color("--usage") },  // few samples yet: dots
        },
      ],
      bands: [{ series: [6, 4], fill: "rgba(130, 80, 223, 0.12)" }],
    }, [[], [], [], [], [], [], [], []], target);
  }

  function currentTable(c) {
    const row = (resource, label) => {
      const v = c.current[resource];
      const fmt = fmtFor(resource);
      const band = v.target === null ? "—" : `${fmt(v.target)} (${fmt(v.lower)} – ${fmt(v.upper)})`;
      return `<tr><th scope="row">${label}</th><td class="num">${fmt(v.usage)}</td>
        <td class="num" data-field="${resource}-request">${fmt(v.request)}</td>
        <td class="num" data-field="${resource}-limit">${fmt(v.limit)}</td>
        <td class="num" data-field="${resource}-allocated">${fmt(v.allocated)}</td>
        <td class="num" data-field="${resource}-applied">${fmt(v.actualRequest)} / ${fmt(v.actualLimit)}</td>
        <td class="num" data-field="${resource}-vpa">${band}</td></tr>`;
    };
    return `<table class="current"><caption>Container ${esc(c.name)} now</caption><thead><tr><th scope="col">Resource</th>
      <th scope="col" class="num">Usage</th><th scope="col" class="num">Request</th><th scope="col" class="num">Limit</th>
      <th scope="col" class="num">Allocated</th><th scope="col" class="num">Applied (req / lim)</th>
      <th scope="col" class="num">VPA target (bounds)</th></tr></thead>
      <tbody>${row("cpu", "CPU")}${row("memory", "Memory")}</tbody></table>`;
  }

  function podPage(namespace, name) {
    main.innerHTML = `
      <h1 tabindex="-1">Pod <span id="pod-title">${esc(namespace)}/${esc(name)}</span></h1>
      <p role="status" id="pod-resize" class="panel" aria-live="polite">loading…</p>
      <dl class="facts" id="pod-facts"></dl>
      <div class="legend" aria-label="Chart legend">
        <span><i style="background:var(--usage)"></i>usage</span><span><i style="background:var(--request)"></i>request</span>
        <span><i style="background:var(--limit)"></i>limit</span><span><i style="background:var(--allocated)"></i>allocated (dashed)</span>
        <span><i style="background:var(--vpa)"></i>VPA target and bounds (band)</span>
        <span><i style="background:rgba(149,56,0,0.4);height:10px"></i>paused at the memory limit (shaded)</span>
        ${Object.entries(MARKER_LABELS).map(([k, l]) => `<span><i style="background:${MARKER_COLORS[k]};width:3px;height:12px"></i>${l}</span>`).join("")}
      </div>
      <div id="containers"></div>
      <h2 id="resize-h">Resize</h2>
      <form class="resize-form panel" id="resize-form" aria-labelledby="resize-h"></form>
      <h2 id="markers-h">Events on the charts</h2>
      <table id="markers" aria-labelledby="markers-h"><thead><tr><th scope="col">Time</th><th scope="col">Kind</th>
        <th scope="col">Reason</th><th scope="col">Container</th><th scope="col">Message</th></tr></thead><tbody></tbody></table>`;
    const box = { markers: [], pauses: [], now: 0 };
    const charts = {};
    exposed.charts = charts;
    let formReady = false;
    let refreshForm = () => {};
    let source = null;

    function facts(d) {
      const items = [
        ["Node", d.node || "—"], ["Status", d.status], ["Ready", d.ready], ["QoS class", d.qos],
        ["Owners", d.owners.join(" → ") || "—"], ["Resize policy", d.policy], ["Restarts", d.restarts],
        ["VPA", d.vpa || "none covers this pod"], ["Pause instead of OOM kill", d.oomKillDisabled ? "yes" : "no"],
      ];
      main.querySelector("#pod-facts").innerHTML = items.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
      const resize = main.querySelector("#pod-resize");
      const parts = [];
      if (d.waiting) parts.push(`Waiting to be placed: ${d.waiting[0]} — ${d.waiting[1]}`);
      if (d.resize.state) parts.push(`Resize ${d.resize.state}${d.resize.message ? `: ${d.resize.message}` : ""}`);
      if (d.paused) parts.push(`Paused: ${d.paused}`);
      resize.textContent = parts.join(" · ") || "No resize in flight.";
      resize.className = `panel ${d.resize.state ? "state-reason" : ""}`;
      resize.dataset.state = d.resize.state || "";
    }

    function drawContainers(d) {
      const holder = main.querySelector("#containers");
      box.markers = d.markers;
      box.pauses = d.pauses;
      box.now = d.window[1];
      for (const c of d.containers) {
        let section = holder.querySelector(`section[data-container="${CSS.escape(c.name)}"]`);
        if (!section) {
          section = document.createElement("section");
          section.dataset.container = c.name;
          section.innerHTML = `<h2>Container ${esc(c.name)}</h2><div class="current-holder"></div>
            <div class="charts"><figure><figcaption>CPU</figcaption><div class="chart" data-resource="cpu"></div></figure>
            <figure><figcaption>Memory</figcaption><div class="chart" data-resource="memory"></div></figure></div>`;
          holder.appendChild(section);
        }
        section.querySelector(".current-holder").innerHTML = currentTable(c);
        for (const resource of ["cpu", "memory"]) {
          const id = `${c.name}/${resource}`;
          const target = section.querySelector(`.chart[data-resource="${resource}"]`);
          if (!charts[id]) {
            const width = Math.max(360, target.clientWidth || 480);
            const view = { zoomed: false };
            charts[id] = { plot: makeChart(target, resource, box, width, view), box, view };
            charts[id].plot.over.addEventListener("dblclick", () => { view.zoomed = false; });
          }
          charts[id].plot.setData(chartData(c, resource), !charts[id].view.zoomed);
          charts[id].data = c[resource];
          charts[id].markers = d.markers;
        }
      }
    }

    function drawMarkers(d) {
      main.querySelector("#markers tbody").innerHTML = [...d.markers].reverse().map((m) => `<tr data-kind="${esc(m.kind)}">
        <td>${fmtTime(m.at)}</td><td class="marker-kind"><i style="display:inline-block;width:10px;height:10px;border-radius:5px;background:${MARKER_COLORS[m.kind]}"></i> ${esc(MARKER_LABELS[m.kind] || m.kind)}</td>
        <td>${esc(m.reason)}</td><td>${esc(m.container)}</td><td>${esc(m.message)}</td></tr>`).join("") ||
        `<tr><td colspan="5" class="note">nothing yet in the last hour</td></tr>`;
    }

    function buildForm(d) {
      const form = main.querySelector("#resize-form");
      const field = (c, kind, resource, label) => {
        const value = esc(((c.spec[kind] || {})[resource]) || "");
        return `<label>${label}
          <input name="${esc(c.name)}.${kind}.${resource}" value="${value}" data-spec="${value}" autocomplete="off"></label>`;
      };
      form.innerHTML = d.containers.map((c) => `<fieldset><legend>${esc(c.name)}</legend><div class="grid">
          ${field(c, "requests", "cpu", "CPU request")}${field(c, "limits", "cpu", "CPU limit")}
          ${field(c, "requests", "memory", "Memory request")}${field(c, "limits", "memory", "Memory limit")}</div></fieldset>`).join("") +
        `<p class="note">The same change with kubectl:</p><pre class="command" id="kubectl-command" aria-live="polite">type a new size above</pre>
        <p id="resize-check" class="note" aria-live="polite"></p>
        <button type="submit" class="action" id="apply-resize" disabled>Apply resize</button>
        <p role="status" id="resize-result"></p>`;
      const typed = () => {
        const containers = {};
        for (const input of form.querySelectorAll("input")) {
          const [container, kind, resource] = input.name.split(".");
          ((containers[container] ||= {})[kind] ||= {})[resource] = input.value;
        }
        return { namespace: d.namespace, name: d.name, containers };
      };
      const post = (path) => fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(typed()) })
        .then(async (r) => ({ status: r.status, body: await r.json() }));
      const button = form.querySelector("#apply-resize");
      let timer = 0;
      let asked = 0;
      const preview = () => {
        const ticket = ++asked;
        post("/api/resize/preview").then(({ body }) => {
          if (ticket !== asked) return;
          form.querySelector("#kubectl-command").textContent = body.command || body.errors?.map((e) => `${e.field}: ${e.message}`).join("\n") || body.error || "";
          const check = form.querySelector("#resize-check");
          check.textContent = body.server ? (body.server.ok ? "✓ " : "✗ ") + body.server.message : "";
          check.className = body.server && !body.server.ok ? "error" : "note";
          button.disabled = !body.command;
        });
      };
      form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(preview, 200); });
      refreshForm = (fresh) => {  // the pod's size changed: follow it where nothing was typed
        let changed = false;
        for (const c of fresh.containers) {
          for (const kind of ["requests", "limits"]) {
            for (const resource of ["cpu", "memory"]) {
              const input = form.elements[`${c.name}.${kind}.${resource}`];
              const now = ((c.spec[kind] || {})[resource]) || "";
              if (!input || input.dataset.spec === now) continue;
              if (input.value === input.dataset.spec) input.value = now;
              input.dataset.spec = now;
              changed = true;
            }
          }
        }
        if (changed) preview();
      };
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        button.disabled = true;
        const result = form.querySelector("#resize-result");
        result.textContent = "sending…";
        post("/api/resize/apply").then(({ body }) => {
          result.textContent = body.ok ? `✓ ${body.message}` : `✗ ${body.message || body.error}`;
          result.className = body.ok ? "" : "error";
          preview();
        });
      });
      preview();
    }

    let closed = false;
    loadCharts().then(() => {
      if (closed) return;
      source = stream({ view: "pod", namespace, name }, {
        pod(d) {
          facts(d);
          drawContainers(d);
          drawMarkers(d);
          if (!formReady) { buildForm(d); formReady = true; } else refreshForm(d);
        },
        missing() {
          main.querySelector("#pod-resize").textContent = `Pod ${namespace}/${name} does not exist (any more).`;
        },
      });
    });
    const resize = () => {
      for (const id of Object.keys(charts)) {
        const target = charts[id].plot.root.parentElement;
        charts[id].plot.setSize({ width: Math.max(360, target.clientWidth), height: 220 });
      }
    };
    window.addEventListener("resize", resize);
    return () => {
      closed = true;
      if (source) source.close();
      window.removeEventListener("resize", resize);
      for (const id of Object.keys(charts)) charts[id].plot.destroy();
      exposed.charts = {};
    };
  }

  // -- workloads --------------------------------------------------------------------------

  const PROGRESS = ["current", "resizing", "outdated", "deferred", "infeasible", "error"];

  function workloadsPage() {
    main.innerHTML = `
      <h1 tabindex="-1">Workloads</h1>
      <p class="note">Each Deployment, Job and ReplicaSet with its pods against its template's size:
        <em>current</em> (resized and applied), <em>resizing</em>, <em>outdated</em> (not yet asked),
        <em>deferred</em>, <em>infeasible</em>, <em>error</em>.</p>
      <p class="note" id="workloads-note"></p>
      <table id="workloads"><thead><tr><th scope="col">Workload</th><th scope="col">Pods</th>
        <th scope="col">Resize progress</th><th scope="col">Status</th><th scope="col">Conditions</th>
        <th scope="col">Waiting, moved, preempted</th></tr></thead><tbody></tbody></table>`;
    const tbody = main.querySelector("#workloads tbody");
    const source = stream({ view: "workloads" }, {
      workloads(view) {
        main.querySelector("#workloads-note").textContent = missingKinds(view.meta);
        tbody.innerHTML = view.workloads.map((w) => {
          const total = w.pods || 1;
          const seg = PROGRESS.filter((s) => w.progress[s]).map((s) =>
            `<span class="${s}" style="width:${(100 * w.progress[s]) / total}%"></span>`).join("");
          const words = PROGRESS.filter((s) => w.progress[s]).map((s) => `${w.progress[s]} ${s}`).join(", ") || "no pods";
          const counts = Object.entries(w.counts).filter(([k]) => k !== "started")
            .map(([k, v]) => `${k} ${v ?? "—"}`);
          const status = w.statusReported ? inParts(counts) : `${inParts(counts)} <span class="note">(no status reported yet)</span>`;
          const conditions = w.conditions.map((c) => `<span class="badge" title="${esc(c.message)}">${esc(c.type)}=${esc(c.status)}${c.reason ? ` (${esc(c.reason)})` : ""}</span>`).join(" ") || "—";
          const waiting = w.waiting.map((p) => {
            const [ns, name] = p.key.split("/");
            return `<div>${namedLink(podHref(ns, name), name)} <span class="badge ${esc(p.state)}">${esc(p.state)}</span> ${esc(p.message)}</div>`;
          }).concat(w.departed.map((d) => `<div>${named(d.pod)} <span class="badge">${esc(MARKER_LABELS[d.kind] || d.kind)}</span>
            ${fmtAgo(d.at, view.meta.now)} ago: ${esc(d.message)}</div>`)).join("") || "—";
          return `<tr data-key="${esc(w.key)}"><th scope="row">${named(`${w.kind} ${w.namespace}/${w.name}`)}</th>
            <td class="num">${w.pods}</td>
            <td><div class="progress" role="img" aria-label="${esc(words)}">${seg}</div><div class="bar-text">${inParts([words])}</div></td>
            <td>${status}</td><td>${conditions}</td><td>${waiting}</td></tr>`;
        }).join("") || `<tr><td colspan="6" class="note">no Deployments, ReplicaSets or Jobs</td></tr>`;
      },
    });
    return () => source.close();
  }

  // -- routing ----------------------------------------------------------------------------

  function route() {
    teardown();
    const hash = location.hash || "#/cluster";
    const [path, query] = hash.slice(1).split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    let page = parts[0] || "cluster";
    if (page === "pod" && parts.length === 3) teardown = podPage(parts[1], parts[2]);
    else if (page === "pods") teardown = podsPage(query || "");
    else if (page === "workloads") teardown = workloadsPage();
    else { page = "cluster"; teardown = clusterPage(); }
    exposed.page = page;
    document.querySelectorAll("nav a").forEach((a) => {
      const here = a.dataset.page === page || (page === "pod" && a.dataset.page === "pods");
      if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    });
    document.title = `${page} · inplace dashboard`;
    const heading = main.querySelector("h1");
    if (heading && document.activeElement !== document.body) heading.focus();
  }

  window.addEventListener("hashchange", route);
  route();
})();
