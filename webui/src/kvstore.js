// The KVStore panel: the store's traffic (kvstore.push / kvstore.pull events) and, for a
// distributed worker, each training step cut into compute, communication and waiting
// (kvstore.step events, published by DistKVStore.end_step; see framework/kvstore/timing.py).
// One stacked bar per step and worker: the three parts add up to the step's wall time.
import { HUE } from "./colors.js";
import { escapeHtml, formatBytes, formatMs } from "./format.js";
import { noRunText, suggestion } from "./catalogue.js";
import { EVICTED_PANEL_TEXT, isEvicted } from "./eviction.js";

const SVG = "http://www.w3.org/2000/svg";
/** The parts of a step, bottom to top, with the event field that holds each. */
export const STEP_PARTS = [
  { field: "compute_ms", label: "compute (no message in flight)", colour: HUE.blue },
  { field: "comm_ms", label: "communication (messages in flight)", colour: HUE.orange },
  { field: "wait_ms", label: "waiting (held by a server for the other workers)", colour: HUE.red },
];
const MAX_STEPS = 200; // the most recent steps drawn per worker
const ROW_HEIGHT = 120;
const BAR_WIDTH = 8;
const GAP = 2;
const LEFT = 56;

/** Fold one kvstore.* event into `traffic` ({push, pull, bytes, steps}); returns whether it was one. */
export function addKVStoreEvent(traffic, event) {
  switch (event.kind) {
    case "kvstore.push":
    case "kvstore.pull":
      traffic[event.kind === "kvstore.push" ? "push" : "pull"] += 1;
      traffic.bytes += Number(event.nbytes) || 0;
      return true;
    case "kvstore.step":
      traffic.steps.push({
        rank: Number(event.rank) || 0,
        step: Number(event.step) || 0,
        compute_ms: Number(event.compute_ms) || 0,
        comm_ms: Number(event.comm_ms) || 0,
        wait_ms: Number(event.wait_ms) || 0,
        calls: Number(event.calls) || 0,
        nbytes: Number(event.nbytes) || 0,
      });
      return true;
    default:
      return false;
  }
}

/** The mean of each part over `steps`, and of the messages per step. */
export function meanSplit(steps) {
  const mean = { compute_ms: 0, comm_ms: 0, wait_ms: 0, calls: 0, nbytes: 0 };
  if (!steps.length) return mean;
  for (const s of steps) for (const key of Object.keys(mean)) mean[key] += s[key];
  for (const key of Object.keys(mean)) mean[key] /= steps.length;
  return mean;
}

export class KVStoreView {
  constructor({ stats, host, legend }) {
    this.stats = stats;
    this.host = host;
    this.legend = legend;
    this.empty = document.createElement("div");
    this.empty.className = "empty-state";
    host.before(this.empty);
    this.model = null;
    legend.innerHTML = STEP_PARTS.map(
      (p) => `<span class="legend-item"><i style="background:${p.colour}"></i>${escapeHtml(p.label)}</span>`,
    ).join("");
  }

  setModel(model) {
    this.model = model;
    this.render();
  }

  render() {
    const model = this.model;
    const traffic = model?.kvstore ?? { push: 0, pull: 0, bytes: 0, steps: [] };
    const hasTraffic = traffic.push + traffic.pull + traffic.steps.length > 0;
    this.empty.style.display = hasTraffic ? "none" : "";
    this.empty.innerHTML = !model
      ? noRunText("kvstore", "to watch a KVStore")
      : isEvicted(model.summary)
        ? EVICTED_PANEL_TEXT
        : model.finished
          ? `This run used no KVStore. ${suggestion("kvstore", "to watch one")}`
          : "No KVStore traffic yet…";
    const byRank = new Map();
    for (const s of traffic.steps) {
      if (!byRank.has(s.rank)) byRank.set(s.rank, []);
      byRank.get(s.rank).push(s);
    }
    const stat = (value, label) => `<div class="stat"><span class="stat-value">${value}</span><span class="stat-label">${escapeHtml(label)}</span></div>`;
    let html = stat(traffic.push, "arrays pushed") + stat(traffic.pull, "arrays pulled") + stat(formatBytes(traffic.bytes), "bytes pushed and pulled");
    for (const [rank, steps] of [...byRank.entries()].sort((a, b) => a[0] - b[0])) {
      const mean = meanSplit(steps);
      const total = mean.compute_ms + mean.comm_ms + mean.wait_ms;
      const share = (ms) => (total > 0 ? ` (${Math.round((100 * ms) / total)} %)` : "");
      html += stat(formatMs(total), `worker ${rank}: mean step (${steps.length} steps)`);
      for (const p of STEP_PARTS) html += stat(formatMs(mean[p.field]) + share(mean[p.field]), `worker ${rank}: ${p.label.split(" (")[0]}`);
      html += stat(mean.calls.toFixed(1), `worker ${rank}: messages per step`);
    }
    this.stats.innerHTML = html;
    this.renderSteps(byRank);
  }

  /** One row per worker: a stacked bar per step, its height the step's wall time. */
  renderSteps(byRank) {
    this.host.replaceChildren();
    this.host.dataset.steps = String([...byRank.values()].reduce((n, steps) => n + steps.length, 0));
    if (!byRank.size) return;
    const rows = [...byRank.entries()].sort((a, b) => a[0] - b[0]).map(([rank, steps]) => [rank, steps.slice(-MAX_STEPS)]);
    const longest = Math.max(...rows.map(([, steps]) => steps.length));
    const peak = Math.max(...rows.flatMap(([, steps]) => steps.map((s) => s.compute_ms + s.comm_ms + s.wait_ms)), 1e-9);
    const width = LEFT + longest * (BAR_WIDTH + GAP) + 8;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(rows.length * (ROW_HEIGHT + 24)));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "time split of every training step, one row per worker");
    const el = (name, attrs, text) => {
      const node = document.createElementNS(SVG, name);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      if (text !== undefined) node.textContent = text;
      return node;
    };
    rows.forEach(([rank, steps], row) => {
      const top = row * (ROW_HEIGHT + 24) + 16;
      const base = top + ROW_HEIGHT;
      svg.append(el("text", { x: 0, y: top - 4, "font-size": 11 }, `worker ${rank} (top: ${formatMs(peak)})`));
      svg.append(el("line", { x1: LEFT - 4, x2: width, y1: base, y2: base, stroke: "#cfd4dc" }));
      steps.forEach((s, i) => {
        const x = LEFT + i * (BAR_WIDTH + GAP);
        let y = base;
        const group = el("g", { "data-step": s.step, "data-rank": rank });
        group.append(
          el("title", {}, `worker ${rank}, step ${s.step}: ` + STEP_PARTS.map((p) => `${p.label.split(" (")[0]} ${formatMs(s[p.field])}`).join(", ") + `; ${s.calls} messages, ${formatBytes(s.nbytes)}`),
        );
        for (const p of STEP_PARTS) {
          const h = (s[p.field] / peak) * ROW_HEIGHT;
          y -= h;
          group.append(el("rect", { x, y, width: BAR_WIDTH, height: Math.max(h, 0), fill: p.colour, "data-part": p.field }));
        }
        svg.append(group);
      });
    });
    this.host.append(svg);
  }
}
