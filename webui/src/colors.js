// One colour per operator, shared by the timeline, the symbol graph and the training charts, so
// that the same name reads the same everywhere and in every run: the colour is derived from the
// name itself (a stable hash), never from the order in which names happen to arrive.
//
// The palette is Tableau 10 (designed to stay distinguishable with the common colour-vision
// deficiencies), with its lighter members darkened to the same hues so that every colour has a
// contrast of at least 3:1 on the white page (WCAG's minimum for graphics): a thin line or a small
// bar must not fade into the background (the training loss was once drawn in pale yellow). The
// order only decides which hash value gets which colour: it is chosen so that the chains of the
// default run (X, Y and P, Q) get clearly different colours.
const NAMED_PALETTE = [
  ["red", "#e15759"], // 3.7:1
  ["teal", "#499894"], // 3.4:1 (Tableau: #76b7b2)
  ["yellow", "#9a7e1c"], // 3.9:1 (Tableau: #edc948)
  ["pink", "#c85a84"], // 4.0:1 (Tableau: #ff9da7)
  ["brown", "#9c755f"], // 4.1:1
  ["green", "#3d8f3a"], // 4.1:1 (Tableau: #59a14f)
  ["purple", "#b07aa1"], // 3.4:1
  ["blue", "#4e79a7"], // 4.6:1
  ["orange", "#c7731f"], // 3.6:1 (Tableau: #f28e2b)
  ["grey", "#79706e"], // 4.8:1 (Tableau: #bab0ac)
];
const PALETTE = NAMED_PALETTE.map(([, colour]) => colour);
/** The palette's colours by hue, for fixed series (the memory chart's "in use" and "pooled"). */
export const HUE = Object.fromEntries(NAMED_PALETTE);

const encoder = new TextEncoder();

/**
 * FNV-1a, 32 bits, over the UTF-8 bytes of `text`: a small, stable hash. The profiler's text
 * timeline (framework/profiler.py) derives its letters from the same function.
 */
export function stableHash(text) {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(String(text))) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The colour a name wants: the same string always wants the same colour. */
export function colorFor(kind) {
  return PALETTE[stableHash(kind) % PALETTE.length];
}

/**
 * Colours for the names shown together in one view (a legend, a chart): each name gets the colour
 * it wants unless a name before it in sorted order took it, in which case it takes the next free
 * one — the rule the text timeline's letters follow. Beyond ten names colours repeat.
 * Returns a Map name -> colour.
 */
export function colorsFor(names) {
  const colors = new Map();
  const free = new Set(PALETTE.keys());
  for (const name of [...new Set(names)].sort()) {
    const wanted = stableHash(name) % PALETTE.length;
    let index = wanted;
    if (free.size) {
      while (!free.has(index)) index = (index + 1) % PALETTE.length;
      free.delete(index);
    }
    colors.set(name, PALETTE[index]);
  }
  return colors;
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

/** Render a legend of `kinds` (array of strings) into `element`, coloured by `colors` (see colorsFor). */
export function renderLegend(element, kinds, title = "Operators", colors = colorsFor(kinds)) {
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
    swatch.style.background = colors.get(kind) ?? colorFor(kind);
    item.append(swatch, document.createTextNode(kind));
    element.append(item);
  }
}
