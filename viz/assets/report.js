// The report page: reads the JSON that viz/src/report_data.cpp embeds and
// draws it with uPlot. Everything from the model (op names, scopes, paths) is
// inserted with textContent, never as markup.
(function () {
  "use strict";

  const data = JSON.parse(document.getElementById("acprof-data").textContent);
  const root = document.getElementById("acprof-report");
  root.textContent = "";
  const categories = data.categories;  // stacking order, bottom first
  const charts = [];                   // every uPlot instance, for zoom sync and tests
  window.acprofCharts = charts;

  const PHASE_SHADES = {
    setup: "rgba(128,128,128,0.10)",
    forward: "rgba(31,119,180,0.10)",
    loss: "rgba(128,128,128,0.16)",
    backward: "rgba(255,127,14,0.12)",
    optimizer: "rgba(44,160,44,0.12)",
  };
  const HIGHLIGHT_FILLS = { segment: "rgba(255,215,0,0.30)", recompute: "rgba(0,190,210,0.30)" };
  const HIGHLIGHT_EDGES = { segment: "#b8860b", recompute: "#008b9a" };
  const BUDGET_COLOR = "#c2185b";
  const PREDICTED_COLOR = "#ff7f0e";
  const BEFORE_COLOR = "#555555";
  const AFTER_COLOR = "#1f77b4";

  // Same units and precision as acprof::formatBytes in the profile format.
  function formatBytes(bytes) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let value = Math.abs(bytes);
    let unit = 0;
    while (value >= 1024 && unit < 4) {
      value /= 1024;
      unit++;
    }
    const sign = bytes < 0 ? "-" : "";
    return unit === 0 ? sign + Math.trunc(value) + " B" : sign + value.toFixed(2) + " " + units[unit];
  }
  function formatMs(us) {
    return (us / 1000).toFixed(2) + " ms";
  }
  function percentChange(before, after) {
    if (!before) return "";
    const change = ((after - before) / before) * 100;
    return (change >= 0 ? "+" : "") + change.toFixed(1) + "%";
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function swatch(color) {
    const node = el("span", "swatch");
    node.style.background = color;
    return node;
  }

  // ---- header and summary -------------------------------------------------

  function renderHeader() {
    const header = el("header");
    header.appendChild(el("h1", null, data.kind === "comparison" ? "Memory before and after" : "Memory timeline"));
    header.appendChild(el("p", "subtitle", data.title));
    const facts = el("dl", "facts");
    function fact(name, value) {
      facts.appendChild(el("dt", null, name));
      const dd = el("dd");
      if (value instanceof Node) dd.appendChild(value);
      else dd.textContent = value;
      facts.appendChild(dd);
    }
    for (const profile of data.profiles) {
      const prefix = data.profiles.length > 1 ? profile.label + ": " : "";
      if (profile.peak) {
        const steps = profile.steps;
        const step = profile.peak.step;
        const where = step >= 0 ? " during " + steps.op[step] + (steps.scope[step] ? " (" + steps.scope[step] + ")" : "") +
                                      ", " + steps.phase[step] : "";
        fact(prefix + "peak", formatBytes(profile.peak.bytes) + where);
        fact(prefix + "peak breakdown", breakdownNode(profile.peak.breakdown));
      }
      const phases = Object.entries(profile.time.per_phase_us)
                         .filter(([, us]) => us > 0)
                         .map(([phase, us]) => phase + " " + formatMs(us))
                         .join(", ");
      fact(prefix + "iteration", formatMs(profile.time.total_us) + (phases ? " (" + phases + ")" : "") + ", " +
                                     profile.step_count + " steps, " + profile.event_count + " allocator events, " +
                                     profile.device + "; times are " + profile.time.source);
    }
    if (data.kind === "comparison" && data.profiles[0].peak && data.profiles[1].peak) {
      const before = data.profiles[0], after = data.profiles[1];
      fact("peak change", formatBytes(before.peak.bytes) + " → " + formatBytes(after.peak.bytes) + " (" +
                              percentChange(before.peak.bytes, after.peak.bytes) + "), time " +
                              formatMs(before.time.total_us) + " → " + formatMs(after.time.total_us) + " (" +
                              percentChange(before.time.total_us, after.time.total_us) + ")");
    }
    if (data.plan) {
      const plan = data.plan;
      fact("plan", plan.solver + ", budget " + (plan.budget_text || formatBytes(plan.budget_bytes)) + " (" +
                       formatBytes(plan.budget_bytes) + "): predicted peak " + formatBytes(plan.predicted_peak_bytes) +
                       " from " + formatBytes(plan.baseline_peak_bytes) + ", +" + formatMs(plan.extra_time_us) +
                       " recompute, " + plan.segments.length + " segments");
    }
    header.appendChild(facts);
    root.appendChild(header);
  }

  function breakdownNode(breakdown) {
    const span = el("span", "breakdown");
    categories.forEach((category, i) => {
      if (!breakdown[i]) return;
      const item = el("span", "breakdown-item");
      item.appendChild(swatch(category.color));
      item.appendChild(document.createTextNode(category.name + " " + formatBytes(breakdown[i])));
      span.appendChild(item);
    });
    return span;
  }

  function renderLegend(parent, extras) {
    const legend = el("div", "legend");
    for (let i = categories.length - 1; i >= 0; i--) {
      const item = el("span", "legend-item");
      item.appendChild(swatch(categories[i].color));
      item.appendChild(document.createTextNode(categories[i].name));
      legend.appendChild(item);
    }
    for (const extra of extras) {
      const item = el("span", "legend-item");
      const line = el("span", "legend-line" + (extra.dashed ? " dashed" : ""));
      line.style.borderColor = extra.color;
      item.appendChild(line);
      item.appendChild(document.createTextNode(extra.name));
      legend.appendChild(item);
    }
    parent.appendChild(legend);
  }

  // ---- tooltip --------------------------------------------------------------

  const tooltip = el("div", "acprof-tooltip");
  tooltip.setAttribute("role", "tooltip");
  tooltip.style.display = "none";
  document.body.appendChild(tooltip);

  function showTooltip(u, rows) {
    tooltip.textContent = "";
    for (const row of rows) tooltip.appendChild(row);
    tooltip.style.display = "block";
    const over = u.over.getBoundingClientRect();
    const left = over.left + window.scrollX + u.cursor.left + 16;
    const top = over.top + window.scrollY + u.cursor.top + 16;
    const maxLeft = window.scrollX + document.documentElement.clientWidth - tooltip.offsetWidth - 8;
    tooltip.style.left = Math.max(8, Math.min(left, maxLeft)) + "px";
    tooltip.style.top = top + "px";
  }
  function hideTooltip() {
    tooltip.style.display = "none";
  }
  // Cursors are synced across charts, so every chart's setCursor hook fires on
  // a move; only the chart under the mouse owns the tooltip.
  let hoveredChart = null;
  function trackHover(u) {
    u.over.addEventListener("mouseenter", () => (hoveredChart = u));
    u.over.addEventListener("mouseleave", () => {
      if (hoveredChart === u) hoveredChart = null;
      hideTooltip();
    });
  }
  function stepRows(profile, sample, prefix) {
    const steps = profile.steps;
    const step = profile.samples.step[sample];
    const event = profile.samples.event[sample];
    const rows = [];
    if (step >= 0) {
      rows.push(el("div", "tip-op", (prefix || "") + steps.op[step]));
      if (steps.scope[step]) rows.push(el("div", "tip-scope", steps.scope[step]));
      rows.push(el("div", "tip-step", "step " + step + " (" + steps.phase[step] + "), event " + event));
    } else {
      rows.push(el("div", "tip-step", (prefix || "") + "before the first step, event " + event));
    }
    return rows;
  }
  function bytesRow(color, name, bytes, className) {
    const row = el("div", "tip-bytes" + (className ? " " + className : ""));
    row.appendChild(swatch(color));
    row.appendChild(el("span", "tip-name", name));
    row.appendChild(el("span", "tip-value", formatBytes(bytes)));
    return row;
  }

  // ---- drawing helpers (canvas pixels) --------------------------------------

  function xPos(u, x) {
    return u.valToPos(x, "x", true);
  }
  function yPos(u, y) {
    return u.valToPos(y, "y", true);
  }
  function clipToPlot(u, draw) {
    const ctx = u.ctx;
    ctx.save();
    // uPlot leaves its axis-label alignment on the context; start from a known state.
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    draw(ctx);
    ctx.restore();
  }
  function drawPhases(u, profile) {
    clipToPlot(u, (ctx) => {
      ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
      ctx.textBaseline = "top";
      for (const span of profile.phases) {
        const x0 = xPos(u, span.x0), x1 = xPos(u, span.x1);
        ctx.fillStyle = PHASE_SHADES[span.phase] || PHASE_SHADES.setup;
        ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
        if (x1 - x0 > 60 * devicePixelRatio) {
          ctx.fillStyle = "#444";
          ctx.fillText(span.phase, x0 + 4 * devicePixelRatio, u.bbox.top + 3 * devicePixelRatio);
        }
      }
    });
  }
  function drawHighlights(u, highlights) {
    clipToPlot(u, (ctx) => {
      ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
      ctx.textBaseline = "top";
      for (const h of highlights) {
        const x0 = xPos(u, h.x0), x1 = Math.max(xPos(u, h.x1), x0 + devicePixelRatio);
        ctx.fillStyle = HIGHLIGHT_FILLS[h.kind];
        ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
        ctx.strokeStyle = HIGHLIGHT_EDGES[h.kind];
        ctx.lineWidth = devicePixelRatio;
        ctx.strokeRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
        if (x1 - x0 > 50 * devicePixelRatio) {
          ctx.fillStyle = HIGHLIGHT_EDGES[h.kind];
          ctx.fillText(h.label, x0 + 3 * devicePixelRatio, u.bbox.top + 16 * devicePixelRatio);
        }
      }
    });
  }
  function drawHorizontal(u, bytes, color, label) {
    clipToPlot(u, (ctx) => {
      const y = yPos(u, bytes);
      ctx.strokeStyle = color;
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.setLineDash([8 * devicePixelRatio, 5 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(u.bbox.left, y);
      ctx.lineTo(u.bbox.left + u.bbox.width, y);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = color;
      ctx.font = "bold " + Math.round(11 * devicePixelRatio) + "px sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      ctx.fillText(label, u.bbox.left + u.bbox.width - 4 * devicePixelRatio, y - 2 * devicePixelRatio);
      ctx.textAlign = "left";
    });
  }
  function drawCornerLine(u, xs, ys, color, dashed) {
    if (!xs.length) return;
    clipToPlot(u, (ctx) => {
      ctx.strokeStyle = color;
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.setLineDash(dashed ? [4 * devicePixelRatio, 3 * devicePixelRatio] : []);
      ctx.beginPath();
      ctx.moveTo(xPos(u, xs[0]), yPos(u, ys[0]));
      for (let i = 1; i < xs.length; i++) ctx.lineTo(xPos(u, xs[i]), yPos(u, ys[i]));
      ctx.stroke();
      ctx.setLineDash([]);
    });
  }
  function drawPeak(u, peak, color) {
    if (!peak) return;
    clipToPlot(u, (ctx) => {
      const x = (xPos(u, peak.x) + xPos(u, peak.x_end)) / 2;
      const y = yPos(u, peak.bytes);
      ctx.strokeStyle = color;
      ctx.lineWidth = devicePixelRatio;
      ctx.setLineDash([2 * devicePixelRatio, 2 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top + u.bbox.height);
      ctx.lineTo(x, y);
      ctx.stroke();
      ctx.setLineDash([]);
      const r = 5 * devicePixelRatio;
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(x, y);
      ctx.lineTo(x - r, y - 1.6 * r);
      ctx.lineTo(x + r, y - 1.6 * r);
      ctx.closePath();
      ctx.fill();
      ctx.font = "bold " + Math.round(11 * devicePixelRatio) + "px sans-serif";
      const label = "peak " + formatBytes(peak.bytes);
      const width = ctx.measureText(label).width;
      const textX = Math.min(x + 2 * r, u.bbox.left + u.bbox.width - width - 4 * devicePixelRatio);
      ctx.textBaseline = "bottom";
      ctx.fillText(label, textX, y - 1.6 * r);
    });
  }

  // ---- charts ------------------------------------------------------------------

  const BYTE_INCREMENTS = [];
  for (let k = 0; k <= 4; k++)
    for (const m of [1, 2, 5, 10, 20, 50, 100, 200, 500]) BYTE_INCREMENTS.push(m * Math.pow(1024, k));

  function yRange(extraMax) {
    return (u, min, max) => [0, Math.max(max, extraMax, 1) * 1.1];
  }
  function axes(xLabel) {
    return [
      { label: xLabel, values: (u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : v.toFixed(1))) },
      { label: "live bytes", size: 80, incrs: BYTE_INCREMENTS, values: (u, splits) => splits.map(formatBytes) },
    ];
  }
  function chartWidth(container) {
    return Math.max(480, container.clientWidth - 4);
  }
  function planExtraMax(showPlan) {
    if (!showPlan || !data.plan) return 0;
    const predicted = data.plan.predicted.bytes.reduce((a, b) => Math.max(a, b), 0);
    return Math.max(data.plan.budget_bytes, predicted);
  }
  function drawPlan(u, showPlan) {
    if (!showPlan || !data.plan) return;
    drawCornerLine(u, data.plan.predicted.x, data.plan.predicted.bytes, PREDICTED_COLOR, true);
    if (data.plan.budget_bytes > 0)
      drawHorizontal(u, data.plan.budget_bytes, BUDGET_COLOR, "budget " + formatBytes(data.plan.budget_bytes));
  }

  // Zooming or panning one chart moves every chart: they share the x axis.
  let syncingScales = false;
  function setAllX(min, max) {
    syncingScales = true;
    for (const chart of charts) chart.setScale("x", { min, max });
    syncingScales = false;
  }
  function syncScaleHook(u, key) {
    if (key !== "x" || syncingScales) return;
    const { min, max } = u.scales.x;
    syncingScales = true;
    for (const chart of charts) if (chart !== u) chart.setScale("x", { min, max });
    syncingScales = false;
  }
  function fullXRange() {
    let end = 0;
    for (const profile of data.profiles) end = Math.max(end, profile.end_x);
    return [0, Math.max(end, 1)];
  }

  // Shift+drag pans instead of selecting: the listener runs in the capture
  // phase on uPlot's root, before uPlot's own drag-to-zoom sees the event.
  function enablePan(u) {
    u.root.addEventListener(
      "mousedown",
      (e) => {
        if (!e.shiftKey || !u.over.contains(e.target)) return;
        e.stopPropagation();
        e.preventDefault();
        const startX = e.clientX;
        const { min, max } = u.scales.x;
        const width = u.over.clientWidth;
        function move(ev) {
          const shift = ((startX - ev.clientX) / width) * (max - min);
          setAllX(min + shift, max + shift);
        }
        function up() {
          window.removeEventListener("mousemove", move);
          window.removeEventListener("mouseup", up);
        }
        window.addEventListener("mousemove", move);
        window.addEventListener("mouseup", up);
      },
      true
    );
  }

  function chartOptions(container, height, series, xLabel, extraMax, draw, drawClear, onCursor) {
    return {
      width: chartWidth(container),
      height,
      series,
      scales: { x: { time: false }, y: { range: yRange(extraMax) } },
      axes: axes(xLabel),
      legend: { show: false },
      cursor: { sync: { key: "acprof-x", setSeries: false }, drag: { x: true, y: false }, points: { show: false } },
      hooks: {
        drawClear: [drawClear],
        draw: [draw],
        setCursor: [onCursor],
        setScale: [syncScaleHook],
      },
    };
  }

  // Cumulative per-category corners, top of the stack first: each series fills
  // down to zero and the ones drawn later (lower in the stack) cover the rest.
  function stackedData(profile) {
    const n = profile.chart.x.length;
    const cumulative = [];
    let running = new Array(n).fill(0);
    for (const bytes of profile.chart.bytes) {
      running = running.map((v, i) => v + bytes[i]);
      cumulative.push(running);
    }
    return [profile.chart.x].concat(cumulative.slice().reverse());
  }

  function stackedChart(parent, profile, title, showPlan) {
    const box = el("section", "chart-box");
    box.appendChild(el("h2", null, title));
    const container = el("div", "chart");
    container.dataset.chart = profile.label;
    box.appendChild(container);
    parent.appendChild(box);
    const series = [{ label: "event" }];
    for (let i = categories.length - 1; i >= 0; i--)
      series.push({ label: categories[i].name, stroke: categories[i].color, fill: categories[i].color, width: 0,
                    points: { show: false } });
    const onCursor = (u) => {
      const idx = u.cursor.idx;
      if (u !== hoveredChart) return;
      if (idx === null || idx === undefined || u.cursor.left < 0) return hideTooltip();
      const sample = idx >> 1;
      const rows = stepRows(profile, sample);
      let total = 0;
      for (let i = categories.length - 1; i >= 0; i--) {
        const bytes = profile.chart.bytes[i][idx];
        total += bytes;
        if (bytes) rows.push(bytesRow(categories[i].color, categories[i].name, bytes));
      }
      rows.push(bytesRow("transparent", "total", total, "tip-total"));
      showTooltip(u, rows);
    };
    const xLabel = profile.label === "after" ? "allocator event (aligned to before, phase by phase)" : "allocator event";
    const opts = chartOptions(container, 340, series, xLabel, planExtraMax(showPlan),
      (u) => {
        drawHighlights(u, profile.highlights);
        drawPlan(u, showPlan);
        drawPeak(u, profile.peak, "#000");
      },
      (u) => drawPhases(u, profile), onCursor);
    const u = new uPlot(opts, stackedData(profile), container);
    trackHover(u);
    enablePan(u);
    charts.push(u);
    return u;
  }

  function overlayChart(parent) {
    const before = data.profiles[0], after = data.profiles[1], overlay = data.overlay;
    const box = el("section", "chart-box");
    box.appendChild(el("h2", null, "Total live bytes, before and after"));
    const container = el("div", "chart");
    container.dataset.chart = "overlay";
    box.appendChild(container);
    parent.appendChild(box);
    const series = [
      { label: "event" },
      { label: "before", stroke: BEFORE_COLOR, width: 2, fill: "rgba(85,85,85,0.08)", points: { show: false } },
      { label: "after", stroke: AFTER_COLOR, width: 2, points: { show: false } },
    ];
    const onCursor = (u) => {
      const idx = u.cursor.idx;
      if (u !== hoveredChart) return;
      if (idx === null || idx === undefined || u.cursor.left < 0) return hideTooltip();
      const merged = idx >> 1;
      const rows = stepRows(before, overlay.before_sample[merged], "before: ");
      rows.push(bytesRow(BEFORE_COLOR, "before total", overlay.before[idx], "tip-total"));
      for (const row of stepRows(after, overlay.after_sample[merged], "after: ")) rows.push(row);
      rows.push(bytesRow(AFTER_COLOR, "after total", overlay.after[idx], "tip-total"));
      showTooltip(u, rows);
    };
    const opts = chartOptions(container, 280, series, "allocator event of before (after aligned phase by phase)",
      planExtraMax(true),
      (u) => {
        drawHighlights(u, before.highlights);
        drawPlan(u, true);
        drawPeak(u, before.peak, BEFORE_COLOR);
        drawPeak(u, after.peak, AFTER_COLOR);
      },
      (u) => drawPhases(u, before), onCursor);
    const u = new uPlot(opts, [overlay.x, overlay.before, overlay.after], container);
    trackHover(u);
    enablePan(u);
    charts.push(u);
    return u;
  }

  function renderControls(parent) {
    const controls = el("div", "controls");
    const reset = el("button", null, "Reset zoom");
    reset.type = "button";
    reset.addEventListener("click", () => setAllX(...fullXRange()));
    const left = el("button", null, "◀ Pan");
    left.type = "button";
    const right = el("button", null, "Pan ▶");
    right.type = "button";
    function pan(direction) {
      const { min, max } = charts[0].scales.x;
      const shift = ((max - min) / 2) * direction;
      setAllX(min + shift, max + shift);
    }
    left.addEventListener("click", () => pan(-1));
    right.addEventListener("click", () => pan(1));
    controls.appendChild(reset);
    controls.appendChild(left);
    controls.appendChild(right);
    controls.appendChild(el("span", "hint",
      "Drag across a chart to zoom, shift+drag to pan, double-click or Reset to see the whole iteration. " +
      "The x axis is the allocator event index: every allocation and free is one event."));
    parent.appendChild(controls);
  }

  // ---- tables ------------------------------------------------------------------

  function table(parent, caption, headers, rows, numericColumns) {
    const t = el("table");
    t.appendChild(el("caption", null, caption));
    const head = el("tr");
    headers.forEach((h, i) => head.appendChild(el("th", numericColumns.includes(i) ? "num" : null, h)));
    t.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    for (const row of rows) {
      const tr = el("tr");
      row.forEach((cell, i) => tr.appendChild(el("td", numericColumns.includes(i) ? "num" : null, cell)));
      body.appendChild(tr);
    }
    t.appendChild(body);
    parent.appendChild(t);
  }

  function renderTables() {
    const section = el("section", "tables");
    if (data.plan) {
      const rows = data.plan.segments.map((s, i) => [
        String(i + 1),
        s.first_node + "–" + s.last_node,
        s.first_op + (s.last_node !== s.first_node ? " … " + s.last_op : ""),
        s.scope,
        formatBytes(s.dropped_bytes),
        String(s.dropped_tensor_count),
        formatMs(s.recompute_time_us),
      ]);
      table(section, "Recomputed segments (" + data.plan.solver + ")",
            ["#", "nodes", "ops", "scope", "bytes saved", "tensors", "recompute"], rows, [0, 4, 5, 6]);
    }
    for (const profile of data.profiles) {
      const rows = profile.largest_activations.map((a) => [
        formatBytes(a.bytes), a.op, a.scope, a.name, a.dtype + a.shape, a.dropped ? "recomputed" : "",
      ]);
      const label = data.profiles.length > 1 ? " (" + profile.label + ")" : "";
      table(section, "Largest activations" + label, ["bytes", "op", "scope", "tensor", "shape", "plan"], rows, [0]);
    }
    root.appendChild(section);
  }

  // ---- page --------------------------------------------------------------------

  renderHeader();
  const chartsSection = el("section", "charts");
  root.appendChild(chartsSection);
  renderControls(chartsSection);
  const extras = [];
  if (data.plan) {
    extras.push({ name: "predicted peak per step (plan)", color: PREDICTED_COLOR, dashed: true });
    extras.push({ name: "budget", color: BUDGET_COLOR, dashed: true });
  }
  if (data.kind === "comparison") {
    extras.push({ name: "before total", color: BEFORE_COLOR });
    extras.push({ name: "after total", color: AFTER_COLOR });
  }
  renderLegend(chartsSection, extras);
  for (const profile of data.profiles)
    if (profile.downsampled)
      chartsSection.appendChild(el("p", "note", profile.label + ": " + profile.event_count +
        " events drawn as " + profile.samples.event.length +
        " samples; every bucket keeps its highest and lowest point, the peak is exact."));
  if (data.kind === "comparison") {
    stackedChart(chartsSection, data.profiles[0], "Before: live bytes by category", true);
    stackedChart(chartsSection, data.profiles[1], "After: live bytes by category", false);
    overlayChart(chartsSection);
  } else {
    stackedChart(chartsSection, data.profiles[0], "Live bytes by category", true);
  }
  renderTables();

  window.addEventListener("resize", () => {
    for (const chart of charts) {
      const container = chart.root.parentNode;
      chart.setSize({ width: chartWidth(container), height: chart.height });
    }
  });
  document.body.dataset.rendered = "true";
})();
