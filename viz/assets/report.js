// The report page: reads the JSON that viz/src/report_data.cpp embeds and
// draws it with dygraphs. Everything from the model (op names, scopes, paths) is
// inserted with textContent, never as markup.
(function () {
  "use strict";

  const data = JSON.parse(document.getElementById("acprof-data").textContent);
  const root = document.getElementById("acprof-report");
  root.textContent = "";
  const categories = data.categories;  // stacking order, bottom first
  const charts = [];                   // every chart, for zoom sync
  window.acprofCharts = [];            // their dygraphs, for tests

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
                              percentChange(before.peak.bytes, after.peak.bytes) + ")");
      fact("extra time", extraTimeText(data.measured_time, data.plan));
      // The profiles time every op between acprof's probes: their totals are
      // not what a training step costs, and the page says so where it shows them.
      fact("profile times", formatMs(before.time.total_us) + " → " + formatMs(after.time.total_us) + " (" +
                                percentChange(before.time.total_us, after.time.total_us) +
                                "), instrumented profiles with acprof's probes around every op, not training-step times");
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

  // The headline extra time: the rewrite's paired measurement of plain
  // training steps, with its standard error, beside the plan's prediction.
  function extraTimeText(measured, plan) {
    const signed = (share) => (share >= 0 ? "+" : "") + (share * 100).toFixed(1) + "%";
    const predicted = plan && plan.baseline_iteration_time_us > 0
                          ? "predicted " + signed(plan.extra_time_us / plan.baseline_iteration_time_us)
                          : "";
    if (!measured) return (predicted || "no prediction") + "; not measured (this rewrite timed no pairs of training steps)";
    // A limit ended the pairs before they agreed: their median is no measurement to show.
    if (measured.verdict === "inconclusive") {
      const spread = measured.extra_share_error === null ? "too few for a standard error"
                                                          : "standard error ± " + (measured.extra_share_error * 100).toFixed(1) + "%";
      return "inconclusive: " + measured.pairs + " alternated pairs of training steps did not agree (" + spread +
             "; step before " + formatMs(measured.before_us) + ")" + (predicted ? "; " + predicted : "");
    }
    const error = measured.extra_share_error === null ? " (too few pairs for a standard error)"
                                                      : " ± " + (measured.extra_share_error * 100).toFixed(1) + "%";
    return signed(measured.extra_share) + error + " measured, median of " + measured.pairs +
           " alternated pairs of training steps (" + formatMs(measured.before_us) + " → " +
           formatMs(measured.before_us * (1 + measured.extra_share)) + ")" + (predicted ? "; " + predicted : "");
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

  function showTooltip(event, rows) {
    tooltip.textContent = "";
    for (const row of rows) tooltip.appendChild(row);
    tooltip.style.display = "block";
    const left = event.pageX + 16;
    const maxLeft = window.scrollX + document.documentElement.clientWidth - tooltip.offsetWidth - 8;
    tooltip.style.left = Math.max(8, Math.min(left, maxLeft)) + "px";
    tooltip.style.top = event.pageY + 16 + "px";
  }
  function hideTooltip() {
    tooltip.style.display = "none";
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

  // ---- drawing helpers (canvas coordinates, in CSS pixels) --------------------

  function clipToPlot(g, ctx, draw) {
    const area = g.getArea();
    ctx.save();
    // Start from a known state, whatever the library left on the context.
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.setLineDash([]);
    ctx.beginPath();
    ctx.rect(area.x, area.y, area.w, area.h);
    ctx.clip();
    draw(area);
    ctx.restore();
  }
  function drawPhases(g, ctx, profile) {
    clipToPlot(g, ctx, (area) => {
      ctx.font = "11px sans-serif";
      ctx.textBaseline = "top";
      for (const span of profile.phases) {
        const x0 = g.toDomXCoord(span.x0), x1 = g.toDomXCoord(span.x1);
        ctx.fillStyle = PHASE_SHADES[span.phase] || PHASE_SHADES.setup;
        ctx.fillRect(x0, area.y, x1 - x0, area.h);
        // Labelled where the phase is wide enough in view, at its visible start.
        const left = Math.max(x0, area.x), right = Math.min(x1, area.x + area.w);
        if (ctx.measureText(span.phase).width + 8 < right - left) {
          ctx.fillStyle = "#444";
          ctx.fillText(span.phase, left + 4, area.y + 3);
        }
      }
    });
  }
  function drawHighlights(g, ctx, highlights) {
    clipToPlot(g, ctx, (area) => {
      ctx.font = "10px sans-serif";
      ctx.textBaseline = "top";
      ctx.lineWidth = 1;
      for (const h of highlights) {
        const x0 = g.toDomXCoord(h.x0), x1 = Math.max(g.toDomXCoord(h.x1), x0 + 1);
        ctx.fillStyle = HIGHLIGHT_FILLS[h.kind];
        ctx.fillRect(x0, area.y, x1 - x0, area.h);
        ctx.strokeStyle = HIGHLIGHT_EDGES[h.kind];
        ctx.strokeRect(x0, area.y, x1 - x0, area.h);
        // Only where the label fits inside its band, so labels never overlap.
        if (ctx.measureText(h.label).width + 6 < x1 - x0) {
          ctx.fillStyle = HIGHLIGHT_EDGES[h.kind];
          ctx.fillText(h.label, x0 + 3, area.y + 16);
        }
      }
    });
  }
  function drawHorizontal(g, ctx, bytes, color, label) {
    clipToPlot(g, ctx, (area) => {
      const y = g.toDomYCoord(bytes);
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.setLineDash([8, 5]);
      ctx.beginPath();
      ctx.moveTo(area.x, y);
      ctx.lineTo(area.x + area.w, y);
      ctx.stroke();
      ctx.fillStyle = color;
      ctx.font = "bold 11px sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      ctx.fillText(label, area.x + area.w - 4, y - 2);
    });
  }
  function drawCornerLine(g, ctx, xs, ys, color, dashed) {
    if (!xs.length) return;
    clipToPlot(g, ctx, () => {
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.setLineDash(dashed ? [4, 3] : []);
      ctx.beginPath();
      ctx.moveTo(g.toDomXCoord(xs[0]), g.toDomYCoord(ys[0]));
      for (let i = 1; i < xs.length; i++) ctx.lineTo(g.toDomXCoord(xs[i]), g.toDomYCoord(ys[i]));
      ctx.stroke();
    });
  }
  function drawPeak(g, ctx, peak, color) {
    if (!peak) return;
    clipToPlot(g, ctx, (area) => {
      const x = (g.toDomXCoord(peak.x) + g.toDomXCoord(peak.x_end)) / 2;
      const y = g.toDomYCoord(peak.bytes);
      ctx.strokeStyle = color;
      ctx.lineWidth = 1;
      ctx.setLineDash([2, 2]);
      ctx.beginPath();
      ctx.moveTo(x, area.y + area.h);
      ctx.lineTo(x, y);
      ctx.stroke();
      ctx.setLineDash([]);
      const r = 5;
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(x, y);
      ctx.lineTo(x - r, y - 1.6 * r);
      ctx.lineTo(x + r, y - 1.6 * r);
      ctx.closePath();
      ctx.fill();
      ctx.font = "bold 11px sans-serif";
      const label = "peak " + formatBytes(peak.bytes);
      const width = ctx.measureText(label).width;
      ctx.textBaseline = "bottom";
      // Below the phase and band labels along the top (11 px at +3, 10 px at +16), never over them.
      ctx.fillText(label, Math.min(x + 2 * r, area.x + area.w - width - 4), Math.max(y - 1.6 * r, area.y + 40));
    });
  }

  // ---- charts ------------------------------------------------------------------
  //
  // Each chart is a dygraph whose x range, y range and mouse handling the page
  // owns: every chart shows the same x range (zoom and pan move all of them),
  // and the y axis always starts at zero and fits what is in view plus the
  // plan's lines, the way the charts looked before any zoom.

  const BYTE_INCREMENTS = [];
  for (let k = 0; k <= 4; k++)
    for (const m of [1, 2, 5, 10, 20, 50, 100, 200, 500]) BYTE_INCREMENTS.push(m * Math.pow(1024, k));

  // y ticks at round binary sizes (1 MiB, 20 MiB, ...), labelled like the tooltip.
  function byteTicks(min, max, pixels, opts) {
    const most = Math.max(2, Math.floor(pixels / opts("pixelsPerLabel")));
    const step = BYTE_INCREMENTS.find((s) => (max - min) / s <= most) || BYTE_INCREMENTS[BYTE_INCREMENTS.length - 1];
    const ticks = [];
    for (let v = Math.ceil(min / step) * step; v <= max; v += step) ticks.push({ v, label: formatBytes(v) });
    return ticks;
  }
  // The x axis is wall time in ms (default) or the allocator event index (data.x_axis).
  const WALL_TIME = data.x_axis !== "allocator_event";
  function xTickLabel(v) {
    if (WALL_TIME) return (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));
    return Number.isInteger(v) ? String(v) : v.toFixed(1);
  }
  function xAxisLabel(of) {
    const unit = WALL_TIME ? "wall time, ms" : "allocator event";
    if (of === "after") return unit + " (of before; after aligned phase by phase)";
    if (of === "overlay") return unit + " of before (after aligned phase by phase)";
    return unit;
  }
  function chartWidth(container) {
    return Math.max(480, container.clientWidth - 4);
  }
  function planExtraMax(showPlan) {
    if (!showPlan || !data.plan) return 0;
    const predicted = data.plan.predicted.bytes.reduce((a, b) => Math.max(a, b), 0);
    return Math.max(data.plan.budget_bytes, predicted);
  }
  function drawPlan(g, ctx, showPlan) {
    if (!showPlan || !data.plan) return;
    drawCornerLine(g, ctx, data.plan.predicted.x, data.plan.predicted.bytes, PREDICTED_COLOR, true);
    if (data.plan.budget_bytes > 0)
      drawHorizontal(g, ctx, data.plan.budget_bytes, BUDGET_COLOR, "budget " + formatBytes(data.plan.budget_bytes));
  }
  function fullXRange() {
    let end = 0;
    for (const profile of data.profiles) end = Math.max(end, profile.end_x);
    return [0, Math.max(end, 1)];
  }

  // The y range for x in [min, max]: zero to the highest corner in view (the
  // one held into the view from its left included), the plan's lines and 10%
  // headroom.
  function yRange(chart, min, max) {
    const xs = chart.xs, top = chart.top;
    let highest = Math.max(chart.extraMax, 1);
    for (let i = 0; i < xs.length && xs[i] <= max; i++)
      if (xs[i] >= min || (i + 1 < xs.length && xs[i + 1] > min)) highest = Math.max(highest, top[i]);
    return [0, highest * 1.1];
  }
  function setAllX(min, max) {
    for (const chart of charts) chart.graph.updateOptions({ dateWindow: [min, max], valueRange: yRange(chart, min, max) });
    // The pointer now points at other data: the cursor and tooltip follow.
    if (lastHover) hover(lastHover.chart, lastHover.event);
  }

  // The sample whose corners [xs[2k], xs[2k+1]) cover x in [lo, hi), the
  // highest where several do: one pixel column can hold many samples, and the
  // one a person points at is the top of the area drawn there.
  function sampleAt(chart, lo, hi) {
    const xs = chart.xs, samples = xs.length / 2;
    let first = 0, last = samples;  // first sample that ends after lo
    while (first < last) {
      const mid = (first + last) >> 1;
      if (xs[2 * mid + 1] > lo) last = mid;
      else first = mid + 1;
    }
    let best = -1;
    for (let k = first; k < samples && xs[2 * k] < hi; k++)
      if (best < 0 || chart.top[2 * k] > chart.top[2 * best]) best = k;
    return best;
  }

  // Pointer position in the chart canvas's coordinates (those of toDomXCoord).
  function canvasPoint(chart, event) {
    const box = chart.graph.graphDiv.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }
  function insidePlot(area, p) {
    return p.x >= area.x && p.x <= area.x + area.w && p.y >= area.y && p.y <= area.y + area.h;
  }
  function overlayBox(chart, className) {
    const box = el("div", className);
    box.style.display = "none";
    chart.graph.graphDiv.appendChild(box);
    return box;
  }
  function placeBox(box, left, top, width, height) {
    box.style.left = left + "px";
    box.style.top = top + "px";
    box.style.width = width + "px";
    box.style.height = height + "px";
    box.style.display = "block";
  }

  // The cursor: a vertical line at the same x in every chart, a horizontal
  // one in the chart under the pointer, and that chart's tooltip.
  let lastHover = null;  // {chart, event} while the pointer is over a plot
  function hover(chart, event) {
    const g = chart.graph, area = g.getArea(), p = canvasPoint(chart, event);
    if (!insidePlot(area, p)) return unhover();
    lastHover = { chart, event };
    const x = g.toDataXCoord(p.x);
    for (const other of charts) {
      const oa = other.graph.getArea(), ox = other.graph.toDomXCoord(x);
      if (ox >= oa.x && ox <= oa.x + oa.w) placeBox(other.cursorX, Math.round(ox), oa.y, 0, oa.h);
      else other.cursorX.style.display = "none";
      if (other === chart) placeBox(other.cursorY, oa.x, Math.round(p.y), oa.w, 0);
      else other.cursorY.style.display = "none";
    }
    const sample = sampleAt(chart, g.toDataXCoord(p.x - 0.5), g.toDataXCoord(p.x + 0.5));
    if (sample < 0) return hideTooltip();
    showTooltip(event, chart.tooltipRows(sample));
  }
  function unhover() {
    lastHover = null;
    for (const chart of charts) {
      chart.cursorX.style.display = "none";
      chart.cursorY.style.display = "none";
    }
    hideTooltip();
  }

  // Drag across a chart to zoom every chart to that x range; shift+drag pans
  // them all; double-click shows the whole iteration again.
  function startDrag(chart, event) {
    const g = chart.graph, area = g.getArea(), start = canvasPoint(chart, event);
    if (event.button !== 0 || !insidePlot(area, start)) return;
    event.preventDefault();  // no text selection while dragging
    const startX = start.x;
    const [min, max] = g.xAxisRange();
    const panning = event.shiftKey;
    const clampX = (x) => Math.max(area.x, Math.min(x, area.x + area.w));
    function move(e) {
      const x = canvasPoint(chart, e).x;
      if (panning) {
        const shift = ((startX - x) / area.w) * (max - min);
        setAllX(min + shift, max + shift);
      } else {
        const end = clampX(x);
        placeBox(chart.selection, Math.min(startX, end), area.y, Math.abs(end - startX), area.h);
      }
    }
    function up(e) {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      chart.selection.style.display = "none";
      if (panning) return;
      const end = clampX(canvasPoint(chart, e).x);
      // A click, or a shaky one, is not a zoom.
      if (Math.abs(end - startX) < 5) return;
      setAllX(g.toDataXCoord(Math.min(startX, end)), g.toDataXCoord(Math.max(startX, end)));
    }
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  // spec: {labels, colors, rows, top (per corner: the highest series), height,
  // xLabel, extraMax, drawUnder(g, ctx), drawOver(g, ctx), tooltipRows(sample),
  // and dygraphs options of its own}.
  function makeChart(parent, title, name, spec) {
    const box = el("section", "chart-box");
    box.appendChild(el("h2", null, title));
    const container = el("div", "chart");
    container.dataset.chart = name;
    const plot = el("div", "chart-plot");
    container.appendChild(plot);
    box.appendChild(container);
    parent.appendChild(box);
    const chart = { xs: spec.rows.map((row) => row[0]), top: spec.top, extraMax: spec.extraMax,
                    height: spec.height, container, tooltipRows: spec.tooltipRows };
    // dygraphs cannot draw an empty data set; a profile without events gets an empty chart.
    const rows = spec.rows.length ? spec.rows : [spec.labels.map(() => 0)];
    const [min, max] = fullXRange();
    const options = Object.assign({
      width: chartWidth(container),
      height: spec.height,
      labels: spec.labels,
      colors: spec.colors,
      dateWindow: [min, max],
      valueRange: yRange(chart, min, max),
      legend: "never",
      xlabel: spec.xLabel,
      ylabel: "live bytes",
      axisLabelFontSize: 12,
      highlightCircleSize: 0,
      gridLineColor: "#e3e3e3",
      axes: {
        x: { axisLabelFormatter: xTickLabel, pixelsPerLabel: 50 },
        y: { ticker: byteTicks, axisLabelWidth: 80 },
      },
      interactionModel: {
        mousedown: (event) => startDrag(chart, event),
        dblclick: () => setAllX(...fullXRange()),
      },
      underlayCallback: (ctx, area, g) => spec.drawUnder(g, ctx),
      plugins: [{ activate: (g) => ({ didDrawChart: (e) => spec.drawOver(g, e.drawingContext) }) }],
    }, spec.options);
    chart.graph = new Dygraph(plot, rows, options);
    chart.cursorX = overlayBox(chart, "cursor-x");
    chart.cursorY = overlayBox(chart, "cursor-y");
    chart.selection = overlayBox(chart, "selection");
    chart.graph.graphDiv.addEventListener("mousemove", (event) => hover(chart, event));
    chart.graph.graphDiv.addEventListener("mouseleave", unhover);
    charts.push(chart);
    window.acprofCharts.push(chart.graph);
    return chart;
  }

  // Cumulative per-category corners, bottom of the stack first: every series
  // fills down to zero and dygraphs fills the first series last, so each
  // category covers the part of the ones above it that lies below its top.
  function stackedRows(profile) {
    return profile.chart.x.map((x, i) => {
      const row = [x];
      let running = 0;
      for (const bytes of profile.chart.bytes) row.push((running += bytes[i]));
      return row;
    });
  }

  function stackedChart(parent, profile, title, showPlan) {
    const rows = stackedRows(profile);
    return makeChart(parent, title, profile.label, {
      labels: ["event"].concat(categories.map((c) => c.name)),
      colors: categories.map((c) => c.color),
      rows,
      top: rows.map((row) => row[row.length - 1]),
      height: 340,
      xLabel: xAxisLabel(profile.label),
      extraMax: planExtraMax(showPlan),
      drawUnder: (g, ctx) => drawPhases(g, ctx, profile),
      drawOver: (g, ctx) => {
        drawHighlights(g, ctx, profile.highlights);
        drawPlan(g, ctx, showPlan);
        drawPeak(g, ctx, profile.peak, "#000");
      },
      tooltipRows: (sample) => {
        const rows = stepRows(profile, sample);
        let total = 0;
        for (let i = categories.length - 1; i >= 0; i--) {
          const bytes = profile.chart.bytes[i][2 * sample];
          total += bytes;
          if (bytes) rows.push(bytesRow(categories[i].color, categories[i].name, bytes));
        }
        rows.push(bytesRow("transparent", "total", total, "tip-total"));
        return rows;
      },
      // Areas only, opaque: the stack is the picture, lines would blur its edges.
      options: { fillGraph: true, fillAlpha: 1, plotter: [Dygraph.Plotters.fillPlotter] },
    });
  }

  function overlayChart(parent) {
    const before = data.profiles[0], after = data.profiles[1], overlay = data.overlay;
    return makeChart(parent, "Total live bytes, before and after", "overlay", {
      labels: ["event", "before", "after"],
      colors: [BEFORE_COLOR, AFTER_COLOR],
      rows: overlay.x.map((x, i) => [x, overlay.before[i], overlay.after[i]]),
      top: overlay.x.map((x, i) => Math.max(overlay.before[i], overlay.after[i])),
      height: 280,
      xLabel: xAxisLabel("overlay"),
      extraMax: planExtraMax(true),
      drawUnder: (g, ctx) => drawPhases(g, ctx, before),
      drawOver: (g, ctx) => {
        drawHighlights(g, ctx, before.highlights);
        drawPlan(g, ctx, true);
        drawPeak(g, ctx, before.peak, BEFORE_COLOR);
        drawPeak(g, ctx, after.peak, AFTER_COLOR);
      },
      tooltipRows: (merged) => {
        const rows = stepRows(before, overlay.before_sample[merged], "before: ");
        rows.push(bytesRow(BEFORE_COLOR, "before total", overlay.before[2 * merged], "tip-total"));
        for (const row of stepRows(after, overlay.after_sample[merged], "after: ")) rows.push(row);
        rows.push(bytesRow(AFTER_COLOR, "after total", overlay.after[2 * merged], "tip-total"));
        return rows;
      },
      options: {
        strokeWidth: 2,
        series: { before: { fillGraph: true, fillAlpha: 0.08 } },
      },
    });
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
      const [min, max] = charts[0].graph.xAxisRange();
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
      (WALL_TIME ? "The x axis is wall time: each step as wide as its measured median time, its allocations spread over it."
                 : "The x axis is the allocator event index: every allocation and free is one event.")));
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
        s.description,
        formatBytes(s.dropped_bytes),
        String(s.dropped_tensor_count),
        formatMs(s.recompute_time_us),
      ]);
      table(section, "Recomputed segments (" + data.plan.solver + ")",
            ["#", "nodes", "module path and ops", "bytes saved", "tensors", "recompute"], rows, [0, 3, 4, 5]);
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

  // Sized once the whole page is there: a scrollbar that the later charts or
  // the tables bring narrows the page after the first charts were drawn.
  function fitChartsToPage() {
    for (const chart of charts) chart.graph.resize(chartWidth(chart.container), chart.height);
  }
  fitChartsToPage();
  window.addEventListener("resize", fitChartsToPage);
  document.body.dataset.rendered = "true";
})();
