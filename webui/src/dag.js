// The dependency view: pushed operations as a DAG (laid out by Graphviz in the browser) with each
// operation's live state. The layout is recomputed when operations are added (at most every
// RELAYOUT_MS); state changes only recolour the existing nodes.
import { escapeDot, escapeHtml } from "./format.js";
import { noRunText } from "./catalogue.js";
import { EVICTED_PANEL_TEXT, isEvicted } from "./eviction.js";
import { enablePanZoom } from "./panzoom.js";
import { getViz } from "./viz.js";

export const MAX_DAG_OPS = 300;
const RELAYOUT_MS = 800;
export const STATES = ["waiting", "ready", "running", "done", "failed"];
const STATE_HELP = {
  waiting: "waiting for an operation it depends on",
  ready: "dependencies done, queued for a free worker",
  running: "running on a worker",
  done: "finished",
  failed: "raised (or inherited) an error",
};

export class DependencyView {
  constructor({ host, legend, note }) {
    this.host = host;
    this.note = note;
    this.model = null;
    this.laidOutCount = -1;
    this.lastLayout = 0;
    this.busy = false;
    this.timer = null;
    legend.innerHTML =
      '<span class="legend-title">State:</span>' +
      STATES.map((s) => `<span class="legend-item" title="${STATE_HELP[s]}"><i class="state-swatch state-${s}"></i>${s}</span>`).join("");
  }

  setModel(model) {
    this.model = model;
    this.laidOutCount = -1;
    this.nodes = null;
    this.host.replaceChildren();
    this.render();
  }

  /** Called whenever the model changed and the panel is visible. */
  render() {
    const model = this.model;
    if (!model || model.order.length === 0) {
      this.host.innerHTML = `<div class="empty-state">${
        !model
          ? noRunText("dag", "to see operations wait for each other")
          : isEvicted(model.summary)
            ? EVICTED_PANEL_TEXT
            : model.finished
              ? "This run pushed no engine operations."
              : "No operation pushed yet…"
      }</div>`;
      this.note.textContent = "";
      this.laidOutCount = -1;
      return;
    }
    if (model.order.length !== this.laidOutCount) this.scheduleLayout();
    else this.paintStates();
  }

  scheduleLayout() {
    if (this.busy || this.timer) return;
    const wait = Math.max(0, this.lastLayout + RELAYOUT_MS - performance.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.layout();
    }, wait);
  }

  visibleOps() {
    const order = this.model.order;
    return order.length > MAX_DAG_OPS ? order.slice(order.length - MAX_DAG_OPS) : order;
  }

  toDot(ops) {
    const shown = new Set(ops.map((op) => op.id));
    const model = this.model;
    const lines = [
      "digraph dependencies {",
      '  rankdir=LR; nodesep=0.15; ranksep=0.35; bgcolor="transparent";',
      '  node [shape=box style="rounded,filled" fillcolor="white" fontname="Helvetica" fontsize=10 height=0.3 margin="0.08,0.03"];',
      '  edge [color="#8a8f98" arrowsize=0.6];',
    ];
    for (const op of ops) {
      const tip = `${op.name} (op ${op.id})\nreads: ${op.reads.map((v) => model.varLabel(v)).join(", ") || "none"}\nwrites: ${
        op.writes.map((v) => model.varLabel(v)).join(", ") || "none"
      }`;
      const id = escapeDot(op.id);
      lines.push(`  "op${id}" [id="dag-op-${id}" label="${escapeDot(op.name)}" tooltip="${escapeDot(tip)}"];`);
    }
    for (const op of ops) {
      for (const dep of op.waitsFor) if (shown.has(dep)) lines.push(`  "op${escapeDot(dep)}" -> "op${escapeDot(op.id)}";`);
    }
    lines.push("}");
    return lines.join("\n");
  }

  async layout() {
    const model = this.model;
    if (!model) return;
    this.busy = true;
    const ops = this.visibleOps();
    const count = model.order.length;
    try {
      const viz = await getViz();
      if (model !== this.model) return;
      const svg = viz.renderSVGElement(this.toDot(ops));
      svg.classList.add("dag-svg");
      // Keep the reader's zoom and scroll position across live re-layouts; a reader who has not
      // scrolled away follows the newest operations: a chain grows to the right, and work with no
      // link to earlier work (the next round of a looping run) is laid out below.
      const previous = this.host.querySelector("svg.dag-svg");
      const keepScale = previous?.dataset.userScaled ? Number(previous.dataset.scale) : null;
      const { scrollLeft, scrollTop } = this.host;
      const followRight = !previous || scrollLeft + this.host.clientWidth >= this.host.scrollWidth - 8;
      const followDown = previous && scrollTop + this.host.clientHeight >= this.host.scrollHeight - 8;
      this.host.replaceChildren(svg);
      enablePanZoom(svg, this.host, keepScale);
      if (keepScale) svg.dataset.userScaled = "true";
      this.host.scrollLeft = followRight ? this.host.scrollWidth : scrollLeft;
      this.host.scrollTop = followDown ? this.host.scrollHeight : scrollTop;
      this.nodes = new Map();
      const byId = new Map(ops.map((op) => [`dag-op-${op.id}`, op]));
      for (const g of svg.querySelectorAll("g.node")) {
        const op = byId.get(g.id);
        if (!op) continue;
        g.dataset.op = String(op.id);
        this.nodes.set(op, g);
      }
      this.laidOutCount = count;
      this.note.innerHTML =
        count > ops.length
          ? `Showing the ${ops.length} most recent of ${count} operations (the layout of thousands of nodes would be unreadable); the timeline shows them all.`
          : `${count} operation${count === 1 ? "" : "s"}. Scroll to move, Ctrl/⌘ + wheel to zoom, drag to pan, double-click to fit; hover a node for its reads and writes.`;
      this.paintStates();
    } catch (error) {
      this.host.innerHTML = `<div class="empty-state error">Graphviz could not lay out the dependency graph: ${escapeHtml(error.message)}</div>`;
    } finally {
      this.busy = false;
      this.lastLayout = performance.now();
      if (this.model && this.model.order.length !== this.laidOutCount) this.scheduleLayout();
    }
  }

  paintStates() {
    if (!this.nodes) return;
    for (const [op, g] of this.nodes) {
      const state = this.model.opState(op);
      if (g.dataset.state !== state) {
        g.dataset.state = state;
        g.setAttribute("class", `node state-${state}`);
      }
    }
  }
}
