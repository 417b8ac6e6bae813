// The symbol graph: the DOT source the scenario attached (mx.viz.plot_network) laid out by Graphviz
// in WebAssembly, nodes recoloured by operator kind, edge labels showing shapes, click for details.
import { api } from "./api.js";
import { colorsFor, renderLegend } from "./colors.js";
import { escapeHtml } from "./format.js";
import { noRunText, suggestion } from "./catalogue.js";
import { enablePanZoom } from "./panzoom.js";
import { getViz } from "./viz.js";

// Graphviz attributes that only describe drawing; everything else on a node is shown as a parameter.
const PRESENTATION = new Set([
  "_gvid", "name", "label", "fillcolor", "fixedsize", "height", "width", "shape", "style", "pos", "color",
  "fontname", "fontsize", "fontcolor", "margin", "penwidth", "id", "_draw_", "_ldraw_", "bb", "xlabel",
]);

/**
 * The operator kind of a plot_network node: the operator the executor's plan names for it when the
 * run bound one (plot_network labels some operators, like SoftmaxOutput, only by their name), else
 * the first label line; input ovals are variables.
 */
export function nodeKind(node, planOps) {
  if (node.shape === "oval" || node.shape === "ellipse") return "variable (input)";
  const planned = planOps?.get(node.name);
  if (planned && planned !== "null") return planned;
  if (planned === "null") return "variable (input)";
  return String(node.label ?? node.name ?? "").split("\n")[0] || node.name;
}

/**
 * Named parameters from a plot_network label. Like MXNet, plot_network prints only the key
 * parameters of a few operators, positionally ("Convolution\n3x3/1, 32"); this names them back.
 */
export function labelParameters(kind, lines) {
  const text = lines.slice(1).join(" ").trim();
  if (!text) return [];
  let m;
  if (kind === "FullyConnected") return [["num_hidden", text]];
  if (kind === "Activation" || kind === "LeakyReLU") return [["act_type", text]];
  if (kind === "Convolution" && (m = /^(\S+)\/(\S+),\s*(\S+)$/.exec(text))) {
    return [["kernel", m[1]], ["stride", m[2]], ["num_filter", m[3]]];
  }
  if (kind === "Pooling" && (m = /^(\S+),\s*(\S+)\/(\S+)$/.exec(text))) {
    return [["pool_type", m[1]], ["kernel", m[2]], ["stride", m[3]]];
  }
  return [["label", text]];
}

/** name -> operator from the run's executor plans (the symbol graph's nodes keep their names). */
function planOperators(model) {
  const ops = new Map();
  for (const plan of model?.plans ?? []) for (const node of plan.graph ?? []) if (!ops.has(node.name)) ops.set(node.name, node.op);
  return ops;
}

export class GraphView {
  constructor({ host, legend, detail }) {
    this.host = host;
    this.legend = legend;
    this.detail = detail;
    this.model = null;
    this.state = "none"; // none | loading | shown | absent | error
    this.selected = null;
  }

  setModel(model) {
    this.model = model;
    this.state = "none";
    this.dot = null;
    this.selected = null;
    this.legend.replaceChildren();
    this.resetDetail();
    this.render();
  }

  resetDetail() {
    this.detail.classList.add("muted");
    this.detail.textContent = "Click a node to see its parameters.";
  }

  /** Called on model/status changes while the panel is visible. */
  render() {
    const model = this.model;
    if (!model) {
      this.showEmpty(noRunText("graph", "to see its network"));
      return;
    }
    if (this.state === "shown" && model.plans.length !== this.plansSeen) {
      // An executor plan arrived after the graph was drawn: it names each node's operator.
      getViz().then((viz) => model === this.model && this.draw(viz, this.dot));
      return;
    }
    if (this.state === "shown" || this.state === "loading") return;
    if (model.summary?.has_graph) {
      this.load(model);
    } else if (model.finished) {
      this.state = "absent";
      this.showEmpty(
        `This run has no symbol graph: <b>${escapeHtml(model.summary?.scenario ?? "")}</b> pushes engine operations directly. ` +
          suggestion("graph", "for a network"),
      );
    } else {
      this.showEmpty("No symbol graph yet — it appears when the scenario builds its network.");
    }
  }

  showEmpty(html) {
    this.host.innerHTML = `<div class="empty-state">${html}</div>`;
  }

  async load(model) {
    this.state = "loading";
    this.showEmpty("Laying out the graph with Graphviz…");
    try {
      const [dot, viz] = await Promise.all([api.graphDot(model.summary.id), getViz()]);
      if (model !== this.model) return;
      this.dot = dot;
      this.draw(viz, dot);
      this.state = "shown";
    } catch (error) {
      if (model !== this.model) return;
      this.state = error.status === 404 ? "absent" : "error";
      this.showEmpty(
        error.status === 404
          ? "This run has no symbol graph."
          : `<span class="error">Could not draw the graph: ${escapeHtml(error.message)}</span>`,
      );
    }
  }

  draw(viz, dot) {
    const layout = viz.renderJSON(dot);
    const objects = layout.objects ?? [];
    const nodes = new Map(objects.filter((o) => !o.nodes).map((o) => [o.name, o]));
    const byGvid = new Map(objects.map((o) => [o._gvid, o]));
    this.edges = (layout.edges ?? []).map((e) => ({
      tail: byGvid.get(e.tail)?.name,
      head: byGvid.get(e.head)?.name,
      label: e.label ?? "",
      back: e.dir === "back",
    }));
    this.nodes = nodes;
    const svg = viz.renderSVGElement(dot);
    svg.classList.add("graph-svg");
    const planOps = planOperators(this.model);
    this.plansSeen = this.model?.plans.length ?? 0;
    this.planOps = planOps;
    const kinds = new Set();
    for (const g of svg.querySelectorAll("g.node")) {
      const name = g.querySelector("title")?.textContent ?? "";
      const node = nodes.get(name) ?? { name };
      const kind = nodeKind(node, planOps);
      kinds.add(kind);
      g.dataset.node = name;
      g.dataset.kind = kind;
      g.addEventListener("click", () => this.select(name, g));
    }
    const colors = colorsFor(kinds);
    for (const g of svg.querySelectorAll("g.node")) {
      for (const shape of g.querySelectorAll("polygon, ellipse, path")) shape.setAttribute("fill", colors.get(g.dataset.kind));
    }
    this.host.replaceChildren(svg);
    enablePanZoom(svg, this.host);
    renderLegend(this.legend, [...kinds], "Operator kinds", colors);
  }

  select(name, g) {
    this.host.querySelectorAll("g.node.selected").forEach((el) => el.classList.remove("selected"));
    g.classList.add("selected");
    const node = this.nodes.get(name) ?? { name };
    const lines = String(node.label ?? name).split("\n");
    const kind = nodeKind(node, this.planOps);
    const params = labelParameters(kind, lines);
    const extra = Object.entries(node).filter(([key]) => !PRESENTATION.has(key) && !key.startsWith("_"));
    // plot_network draws arrows from consumer to producer with dir=back; either way the arrowhead
    // points at the consumer, so "inputs" are the edges whose arrowhead ends at this node.
    const inputs = this.edges.filter((e) => (e.back ? e.tail === name : e.head === name));
    const outputs = this.edges.filter((e) => (e.back ? e.head === name : e.tail === name));
    const other = (e, self) => (e.tail === self ? e.head : e.tail);
    const row = (k, v) => `<tr><th>${escapeHtml(k)}</th><td>${v}</td></tr>`;
    const edgeList = (list) =>
      list.length
        ? list.map((e) => `${escapeHtml(other(e, name))}${e.label ? ` <span class="shape">${escapeHtml(e.label)}</span>` : ""}`).join("<br>")
        : '<span class="muted">none</span>';
    this.detail.classList.remove("muted");
    this.detail.innerHTML = `<h3>${escapeHtml(name)}</h3><table class="kv">
      ${row("operator", escapeHtml(kind))}
      ${params.length ? params.map(([k, v]) => row(k, escapeHtml(v))).join("") : row("parameters", '<span class="muted">none in the graph file (plot_network shows the key parameters of FullyConnected, Convolution, Pooling and activations only)</span>')}
      ${extra.map(([k, v]) => row(k, escapeHtml(String(v)))).join("")}
      ${row("inputs (shape)", edgeList(inputs))}
      ${row("feeds", edgeList(outputs))}
    </table>`;
  }
}
