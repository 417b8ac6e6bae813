// mx.mon.Monitor's statistics, folded from `monitor.stat` events into one row per monitored array.
// A Monitor reports every `interval`-th batch one line per array (layer outputs, then the
// arguments and auxiliary states, or sorted by name when its `sort` is set); rows keep the order
// in which arrays first arrive, so the table reads as the Monitor prints. Each row keeps its
// latest value and the last RECENT values of the statistic's first element for the trend.

/** Values kept per row for the trend and its min/max. */
export const RECENT = 30;
/** Rows kept at most (a pattern matching thousands of arrays still gives a bounded table). */
export const MAX_ROWS = 500;

/** A statistic as it arrives: a number, or the string the server's strict JSON writes for NaN and
 * the infinities ("nan", "inf", "-inf"); anything else is not a number. */
export function statNumber(value) {
  if (typeof value === "number") return value;
  if (value === "inf" || value === "Infinity") return Infinity;
  if (value === "-inf" || value === "-Infinity") return -Infinity;
  return NaN;
}

export class MonitorStats {
  constructor() {
    this.rows = new Map(); // "role name" -> row
    this.order = []; // rows in first-arrival order
    this.latestBatch = null;
    this.updates = 0; // events folded (panels redraw when it changes)
    this.skipped = 0; // events of arrays beyond MAX_ROWS
  }

  get size() {
    return this.order.length;
  }

  /** Fold one `monitor.stat` event: {batch, name, role, stat, value}. */
  add(event) {
    const name = String(event.name);
    const role = String(event.role ?? "");
    const key = `${role} ${name}`;
    let row = this.rows.get(key);
    if (!row) {
      if (this.order.length >= MAX_ROWS) {
        this.skipped += 1;
        return;
      }
      row = { name, role, stat: "", batch: null, latest: [], recent: [] };
      this.rows.set(key, row);
      this.order.push(row);
    }
    const batch = Number(event.batch);
    row.stat = String(event.stat ?? "");
    row.batch = batch;
    row.latest = Array.isArray(event.value) ? event.value.map(statNumber) : [statNumber(event.value)];
    row.recent.push({ batch, value: row.latest.length ? row.latest[0] : NaN });
    if (row.recent.length > RECENT) row.recent.shift();
    if (this.latestBatch === null || batch > this.latestBatch) this.latestBatch = batch;
    this.updates += 1;
  }
}

/** The smallest and largest finite value of a row's recent values (null when there is none). */
export function recentRange(row) {
  const finite = row.recent.map((r) => r.value).filter(Number.isFinite);
  if (!finite.length) return null;
  return { min: Math.min(...finite), max: Math.max(...finite) };
}
