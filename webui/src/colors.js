// One colour per operator, shared by the timeline and the symbol graph so that the same operator
// reads the same everywhere. Colours are handed out in order of first appearance.
import d3 from "d3";

const PALETTE = [...d3.schemeTableau10, ...d3.schemeSet3, ...d3.schemePastel1];
const assigned = new Map();

/** The colour of an operator kind (any string). */
export function colorFor(kind) {
  if (!assigned.has(kind)) assigned.set(kind, PALETTE[assigned.size % PALETTE.length]);
  return assigned.get(kind);
}

/**
 * The operator kind of an engine operation name: digits dropped so that X1, X2, ... share a colour
 * and fused executor segments ("fc1..softmax [4 nodes]") are one kind.
 */
export function operatorKind(name) {
  const text = String(name ?? "");
  if (/\[\d+ nodes\]$/.test(text)) return "fused segment";
  const kind = text.replace(/\d+/g, "").replace(/[._\s]+$/, "");
  return kind || text || "(unnamed)";
}

/** Render a legend of `kinds` (array of strings) into `element`. */
export function renderLegend(element, kinds, title = "Operators") {
  element.replaceChildren();
  if (!kinds.length) return;
  const label = document.createElement("span");
  label.className = "legend-title";
  label.textContent = `${title}:`;
  element.append(label);
  for (const kind of kinds) {
    const item = document.createElement("span");
    item.className = "legend-item";
    const swatch = document.createElement("i");
    swatch.style.background = colorFor(kind);
    item.append(swatch, document.createTextNode(kind));
    element.append(item);
  }
}
