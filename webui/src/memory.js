// The memory panel: pooled-allocator bytes over time (uPlot), pool hit/miss counts, and the
// executor's storage plan (one row per block, d3) with planned versus naive bytes.
import d3 from "d3";
import uPlot from "uplot";
import { LineChart } from "./charts.js";
import { HUE } from "./colors.js";
import { escapeHtml, formatBytes, formatMs } from "./format.js";
import { noRunText, suggestion } from "./catalogue.js";
import { EVICTED_PANEL_TEXT, isEvicted } from "./eviction.js";

export class MemoryView {
  constructor({ stats, chartHost, planHost, planBytes, planPicker, planPickerLabel }) {
    this.stats = stats;
    this.chartHost = chartHost;
    this.planHost = planHost;
    this.planBytes = planBytes;
    this.planPicker = planPicker;
    this.planPickerLabel = planPickerLabel;
    this.model = null;
    this.chart = new LineChart(chartHost, {
      title: "Storage (all devices)",
      xLabel: "time since first event",
      yLabel: "bytes",
      xFormat: formatMs,
      yFormat: formatBytes,
      series: [
        { label: "in use", stroke: HUE.blue, fill: `${HUE.blue}1f`, paths: stepped() },
        { label: "pooled (free, kept for reuse)", stroke: HUE.orange, paths: stepped() },
      ],
    });
    this.empty = document.createElement("div");
    this.empty.className = "empty-state";
    chartHost.before(this.empty);
    planPicker.addEventListener("change", () => this.renderPlan(true));
    this.planShown = null;
  }

  setModel(model) {
    this.model = model;
    this.planShown = null;
    this.planPicker.replaceChildren();
    this.render();
  }

  render() {
    const model = this.model;
    const m = model?.memory;
    const samples = m ? m.t.length : 0;
    this.empty.style.display = samples ? "none" : "";
    this.empty.innerHTML = !model
      ? noRunText("memory", "to watch the storage pool")
      : isEvicted(model.summary)
        ? EVICTED_PANEL_TEXT
        : model.finished
          ? `This run allocated no storage. ${suggestion("memory", "to watch the storage pool")}`
          : "No allocation yet…";
    this.chartHost.style.display = samples ? "" : "none";
    if (samples) this.chart.setData([m.t, m.inUse, m.pooled]);
    else this.chartHost.dataset.points = "0";
    const total = m ? m.hits + m.misses : 0;
    this.stats.innerHTML = m
      ? [
          stat("in use now", formatBytes(m.inUseNow)),
          stat("peak in use", formatBytes(m.peak)),
          stat("pooled now", formatBytes(m.pooledNow)),
          stat("allocations", String(total)),
          stat("pool hits", `${m.hits}${total ? ` (${Math.round((100 * m.hits) / total)}%)` : ""}`),
          stat("pool misses", String(m.misses)),
          stat("frees", String(m.frees)),
        ].join("")
      : "";
    this.renderPlan(false);
  }

  renderPlan(force) {
    const plans = this.model?.plans ?? [];
    if (!plans.length) {
      this.planPickerLabel.hidden = true;
      this.planBytes.innerHTML = "";
      this.planHost.innerHTML = `<div class="empty-state">${
        isEvicted(this.model?.summary)
          ? EVICTED_PANEL_TEXT
          : this.model
            ? `No executor plan in this run. ${suggestion("plan", "to bind an executor, which plans its memory")}`
            : noRunText("plan", "to bind an executor, which plans its memory")
      }</div>`;
      this.planShown = null;
      return;
    }
    if (this.planPicker.options.length !== plans.length) {
      const keep = this.planPicker.options.length ? this.planPicker.value : null;
      this.planPicker.replaceChildren(
        ...plans.map((p, i) => new Option(`#${i + 1} at ${formatMs(p.t)} — ${p.graph?.length ?? 0} nodes`, String(i))),
      );
      this.planPicker.value = keep ?? String(plans.length - 1);
    }
    this.planPickerLabel.hidden = plans.length < 2;
    const plan = plans[Number(this.planPicker.value) || 0];
    if (plan === this.planShown && !force) return;
    this.planShown = plan;
    drawPlanBytes(this.planBytes, plan);
    drawPlan(this.planHost, plan);
  }
}

// Bytes change in steps at each allocation or free, so the lines are drawn as steps.
function stepped() {
  return uPlot.paths.stepped({ align: 1 });
}

function stat(label, value) {
  return `<div class="stat"><span class="stat-value">${escapeHtml(value)}</span><span class="stat-label">${escapeHtml(label)}</span></div>`;
}

function drawPlanBytes(host, plan) {
  const planned = Number(plan.bytes_planned) || 0;
  const naive = Number(plan.bytes_naive) || 0;
  // Older traces have no lower bound (executor.plan gained it with the greedy planner): no row then.
  const bound = plan.bytes_lower_bound === undefined ? null : Number(plan.bytes_lower_bound) || 0;
  const strategy = String(plan.strategy ?? "mxnet");
  const scale = Math.max(planned, naive, 1);
  const saved = naive > 0 ? Math.round((100 * (naive - planned)) / naive) : 0;
  const above = bound > 0 ? Math.round((100 * (planned - bound)) / bound) : 0;
  const boundRow =
    bound === null
      ? ""
      : `<div class="bytes-row"><span class="bytes-label">lower bound</span>
      <span class="bytes-bar bound" style="width:${(100 * bound) / scale}%"></span>
      <span class="bytes-value" data-bytes-lower-bound="${bound}">${formatBytes(bound)}</span></div>`;
  const boundText =
    bound === null
      ? ""
      : ` The lower bound is the peak of the bytes alive at once in this schedule: no plan can use less; this one
      is ${above}% above it.`;
  host.innerHTML = `
    <div class="bytes-row"><span class="bytes-label" data-strategy="${escapeHtml(strategy)}">planned (${escapeHtml(strategy)})</span>
      <span class="bytes-bar planned" style="width:${(100 * planned) / scale}%"></span>
      <span class="bytes-value" data-bytes-planned="${planned}">${formatBytes(planned)}</span></div>${boundRow}
    <div class="bytes-row"><span class="bytes-label">naive</span>
      <span class="bytes-bar naive" style="width:${(100 * naive) / scale}%"></span>
      <span class="bytes-value" data-bytes-naive="${naive}">${formatBytes(naive)}</span></div>
    <p class="muted">Sharing and in-place reuse save ${saved}% of the intermediate memory
      (${escapeHtml(String(plan.blocks?.length ?? 0))} blocks instead of one buffer per tensor; arguments and their
      gradients live in arrays you bound, so no number counts them).${boundText} Planner: ${escapeHtml(strategy)}
      (the memory_planning scenario's <code>planner</code> switches it). Mirror: ${escapeHtml(String(plan.mirror ?? "none"))}.</p>`;
}

/** The lifetimes of planned entries: [{entry, block, first, last, inplaceOf}] in schedule steps. */
export function planLifetimes(plan) {
  const graph = plan.graph ?? [];
  const entries = plan.entries ?? [];
  const storage = plan.storage ?? [];
  const step = new Map(); // node id -> schedule step (operator nodes only)
  for (const node of graph) if (node.op !== "null") step.set(node.id, step.size);
  const entryOf = new Map(); // "node:index" -> entry id
  const outputIndex = new Map();
  for (const entry of entries) {
    const index = outputIndex.get(entry.node) ?? 0;
    outputIndex.set(entry.node, index + 1);
    entryOf.set(`${entry.node}:${index}`, entry.id);
  }
  const lastRead = new Map();
  for (const node of graph) {
    for (const [src, index] of node.inputs ?? []) {
      const eid = entryOf.get(`${src}:${index}`);
      if (eid !== undefined && step.has(node.id)) lastRead.set(eid, Math.max(lastRead.get(eid) ?? -1, step.get(node.id)));
    }
  }
  const inplaceOf = new Map((plan.inplace ?? []).map(([input, output]) => [output, input]));
  const steps = step.size;
  const lifetimes = [];
  for (const entry of entries) {
    const block = storage[entry.id];
    // Negative storage ids are not blocks (framework/executor/plan_memory.py): -1 no storage, -2 external.
    if (block === undefined || block < 0 || !step.has(entry.node)) continue;
    const first = step.get(entry.node);
    const last = Math.max(first, lastRead.get(entry.id) ?? steps - 1); // unread: a graph output, kept to the end
    lifetimes.push({ entry, block, first, last, inplaceOf: inplaceOf.get(entry.id) });
  }
  const stepNames = graph.filter((n) => n.op !== "null").map((n) => ({ name: n.name, op: n.op, backward: n.backward }));
  return { lifetimes, steps, stepNames };
}

/** `text` shortened with an ellipsis to about `pixels` wide (10px font), or "" if nothing fits. */
function fitText(text, pixels) {
  const chars = Math.floor(pixels / 6);
  if (chars >= text.length) return text;
  return chars >= 4 ? `${text.slice(0, chars - 1)}…` : "";
}

function drawPlan(host, plan) {
  const { lifetimes, steps, stepNames } = planLifetimes(plan);
  const blocks = plan.blocks ?? [];
  host.replaceChildren();
  if (!blocks.length || !lifetimes.length) {
    host.innerHTML = '<div class="empty-state">This plan has no planned blocks (every array is external).</div>';
    return;
  }
  const entryNames = new Map((plan.entries ?? []).map((e) => [e.id, e.name]));
  const rowH = 24;
  const labelW = 150;
  const axisH = 34;
  const width = Math.max(host.clientWidth || 800, 480);
  const plotW = width - labelW - 12;
  const x = d3.scaleLinear().domain([0, Math.max(steps, 1)]).range([0, plotW]);
  const svg = d3
    .select(host)
    .append("svg")
    .attr("class", "plan")
    .attr("width", width)
    .attr("height", axisH + blocks.length * rowH + 6);
  const backwardStart = stepNames.findIndex((s) => s.backward);
  const plot = svg.append("g").attr("transform", `translate(${labelW},${axisH})`);
  if (backwardStart > 0) {
    plot
      .append("rect")
      .attr("class", "backward-zone")
      .attr("x", x(backwardStart))
      .attr("width", plotW - x(backwardStart))
      .attr("height", blocks.length * rowH);
    plot.append("text").attr("class", "zone-label").attr("x", x(backwardStart) + 4).attr("y", -22).text("backward pass →");
  }
  svg
    .append("g")
    .attr("class", "axis")
    .attr("transform", `translate(${labelW},${axisH - 4})`)
    .call(
      d3
        .axisTop(x)
        .ticks(Math.min(steps, Math.floor(plotW / 60)))
        .tickFormat((d) => (Number.isInteger(d) ? `step ${d}` : "")),
    );
  const rows = svg
    .append("g")
    .selectAll("text")
    .data(blocks)
    .join("text")
    .attr("class", "lane-label")
    .attr("x", 6)
    .attr("y", (b, i) => axisH + i * rowH + rowH / 2)
    .attr("dy", "0.35em");
  rows.text((b, i) => `block ${i} · ${formatBytes(b)}`);
  const seg = plot
    .selectAll("g.segment")
    .data(lifetimes)
    .join("g")
    .attr("class", (d) => `segment${d.inplaceOf !== undefined ? " inplace" : ""}${stepNames[d.first]?.backward ? " backward" : ""}`)
    .attr("data-entry", (d) => d.entry.name)
    .attr("data-block", (d) => d.block)
    .attr("transform", (d) => `translate(${x(d.first)},${d.block * rowH + 3})`);
  seg
    .append("rect")
    .attr("width", (d) => Math.max(2, x(d.last + 1) - x(d.first) - 1))
    .attr("height", rowH - 6)
    .attr("rx", 3);
  seg
    .append("text")
    .attr("x", 4)
    .attr("y", (rowH - 6) / 2)
    .attr("dy", "0.35em")
    .text((d) => fitText(d.entry.name, x(d.last + 1) - x(d.first) - 8));
  seg.append("title").text((d) => {
    const from = stepNames[d.first];
    const to = stepNames[d.last];
    const inplace = d.inplaceOf !== undefined ? `\nwritten in place over ${entryNames.get(d.inplaceOf) ?? d.inplaceOf}` : "";
    return `${d.entry.name} — ${formatBytes(d.entry.bytes)} in block ${d.block}\nwritten at step ${d.first} (${from?.name}, ${from?.op})\nlast read at step ${d.last} (${to?.name})${inplace}`;
  });
}
