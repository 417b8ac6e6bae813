// Number formatting shared by every panel: bytes with binary units, durations in ms/µs/s, statistics.

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** 1536 -> "1.5 KiB"; exact below 1 KiB. */
export function formatBytes(bytes) {
  if (bytes == null || !Number.isFinite(bytes)) return "–";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const sign = bytes < 0 ? "-" : "";
  return unit === 0 ? `${sign}${value} B` : `${sign}${value.toFixed(value < 10 ? 2 : 1)} ${BYTE_UNITS[unit]}`;
}

/** A duration given in milliseconds, in the unit that reads best. */
export function formatMs(ms) {
  if (ms == null || !Number.isFinite(ms)) return "–";
  const abs = Math.abs(ms);
  if (abs === 0) return "0 ms";
  if (abs < 1) return `${(ms * 1000).toFixed(abs < 0.01 ? 2 : 0)} µs`;
  if (abs < 1000) return `${ms.toFixed(abs < 10 ? 2 : 1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** Escape text for insertion into HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/** Escape text for a double-quoted Graphviz DOT string. */
export function escapeDot(text) {
  return String(text).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A monitored statistic: 4 significant digits, exponent for very small or large, NaN and ±∞ spelled out. */
export function formatStat(value) {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+∞";
  if (value === -Infinity) return "−∞";
  if (value === 0) return "0";
  const abs = Math.abs(value);
  return abs >= 1e4 || abs < 1e-3 ? value.toExponential(2) : value.toPrecision(4);
}
