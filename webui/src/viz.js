// One shared Graphviz instance (Graphviz compiled to WebAssembly by @viz-js/viz). Creating it
// compiles the wasm module once; both the symbol graph and the dependency view lay out with it.
import { instance } from "@viz-js/viz";

let pending = null;

/** The Viz instance, created on first use. */
export function getViz() {
  if (!pending) pending = instance();
  return pending;
}
