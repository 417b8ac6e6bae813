// Zoom and pan for an SVG produced by Graphviz inside a scrolling host. The SVG starts at its
// natural size (Graphviz works in points; a CSS pixel is 3/4 pt) shrunk to the host's width if it is
// wider, so labels stay readable; the host scrolls. Ctrl/⌘ + wheel zooms around the pointer,
// dragging pans, double-click fits the whole graph in view.

const MIN_SCALE = 0.05;
const MAX_SCALE = 4;
const READABLE_SCALE = 0.6;

/**
 * Make `svgElement` (already inside `host`) zoomable and pannable; returns a function that fits it.
 * `initialScale` (e.g. the scale of the previous drawing, when a live graph is re-laid out) wins over
 * the default of natural size shrunk to the host's width.
 */
export function enablePanZoom(svgElement, host, initialScale = null) {
  const box = svgElement.viewBox?.baseVal;
  const naturalWidth = box?.width ? (box.width * 4) / 3 : 800;
  const naturalHeight = box?.height ? (box.height * 4) / 3 : 600;
  svgElement.removeAttribute("width");
  svgElement.removeAttribute("height");
  let scale = 1;
  const apply = () => {
    svgElement.style.width = `${naturalWidth * scale}px`;
    svgElement.style.height = `${naturalHeight * scale}px`;
    svgElement.dataset.scale = scale.toFixed(3);
  };
  const clamp = (k) => Math.min(MAX_SCALE, Math.max(MIN_SCALE, k));
  const fit = () => {
    const height = host.clientHeight || parseFloat(getComputedStyle(host).maxHeight) || naturalHeight;
    scale = clamp(Math.min(1, (host.clientWidth - 4) / naturalWidth, (height - 4) / naturalHeight));
    apply();
  };
  // By default: natural size, shrunk to the host's width but never below READABLE_SCALE (the host
  // scrolls for the rest), so labels stay legible on large graphs.
  const widthFit = host.clientWidth > 0 ? (host.clientWidth - 4) / naturalWidth : 1;
  scale = clamp(initialScale ?? Math.min(1, Math.max(READABLE_SCALE, widthFit)));
  apply();

  host.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey) return; // plain wheel scrolls the host
      event.preventDefault();
      const rect = host.getBoundingClientRect();
      const px = event.clientX - rect.left + host.scrollLeft;
      const py = event.clientY - rect.top + host.scrollTop;
      const next = clamp(scale * Math.exp(-event.deltaY * 0.002));
      const ratio = next / scale;
      scale = next;
      svgElement.dataset.userScaled = "true";
      apply();
      // Keep the point under the pointer where it was.
      host.scrollLeft = px * ratio - (event.clientX - rect.left);
      host.scrollTop = py * ratio - (event.clientY - rect.top);
    },
    { passive: false },
  );
  let drag = null;
  svgElement.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, left: host.scrollLeft, top: host.scrollTop, id: event.pointerId };
  });
  svgElement.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    // Capture only once it is a real drag, so that a plain click still reaches the node under it.
    if (Math.abs(dx) + Math.abs(dy) > 3 && !svgElement.hasPointerCapture(drag.id)) svgElement.setPointerCapture(drag.id);
    host.scrollLeft = drag.left - dx;
    host.scrollTop = drag.top - dy;
  });
  const stop = () => (drag = null);
  svgElement.addEventListener("pointerup", stop);
  svgElement.addEventListener("pointercancel", stop);
  svgElement.addEventListener("dblclick", fit);
  return fit;
}
