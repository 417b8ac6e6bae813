// The Monitor table of the Training panel: one row per array mx.mon.Monitor watches (rows of a
// MonitorStats), with the latest statistic, its min and max over recent records and a sparkline.
// A NaN or infinite statistic (a diverged layer) is shown as such and the row is marked.
import { escapeHtml, formatStat } from "./format.js";
import { RECENT, recentRange } from "./monitorstats.js";

const ROLE_LABELS = { output: "output", input: "input", argument: "argument", auxiliary: "aux state" };
const SHOWN_VALUES = 4; // a statistic with several elements shows its first few

/** An inline SVG line of the recent values (gaps at NaN and infinities), or "" with fewer than two. */
function sparkline(row, width = 96, height = 20) {
  const range = recentRange(row);
  const points = row.recent;
  if (!range || points.length < 2) return "";
  const span = range.max - range.min || 1;
  const x = (i) => ((i / (points.length - 1)) * (width - 2) + 1).toFixed(1);
  const y = (v) => (range.max === range.min ? height / 2 : height - 2 - ((v - range.min) / span) * (height - 4)).toFixed(1);
  let path = "";
  let pen = "M";
  points.forEach((p, i) => {
    if (!Number.isFinite(p.value)) {
      pen = "M";
      return;
    }
    path += `${pen}${x(i)},${y(p.value)}`;
    pen = "L";
  });
  const title = `batches ${points[0].batch}–${points.at(-1).batch}`;
  return `<svg class="sparkline" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><title>${escapeHtml(title)}</title><path d="${path}"/></svg>`;
}

function latestText(values) {
  const shown = values.slice(0, SHOWN_VALUES).map(formatStat).join(", ");
  if (values.length <= 1) return shown || "–";
  return `[${shown}${values.length > SHOWN_VALUES ? ", …" : ""}]`;
}

export class MonitorTable {
  /** @param host element the table is drawn into; its data-rows / data-batch attributes track what it shows */
  constructor({ host, note }) {
    this.host = host;
    this.note = note;
    this.drawn = null; // (stats, updates) last drawn, to skip identical redraws
  }

  /** Draw `stats` (a MonitorStats, or null); `emptyHtml` is what the note says when it has no row. */
  render(stats, emptyHtml) {
    const rows = stats ? stats.order : [];
    this.host.dataset.rows = String(rows.length);
    this.host.dataset.batch = stats?.latestBatch == null ? "" : String(stats.latestBatch);
    if (!rows.length) {
      this.drawn = null;
      this.host.replaceChildren();
      this.note.innerHTML = emptyHtml;
      return;
    }
    const stamp = `${stats.updates}`;
    if (this.drawn?.stats === stats && this.drawn.stamp === stamp) return;
    this.drawn = { stats, stamp };
    const stat = [...new Set(rows.map((r) => r.stat))].join(", ");
    const skipped = stats.skipped ? ` ${stats.skipped} records of further arrays are not shown.` : "";
    this.note.textContent = `Statistic ${stat}, latest record at batch ${stats.latestBatch}.${skipped}`;
    const body = rows
      .map((row) => {
        const bad = row.latest.some((v) => !Number.isFinite(v));
        const range = recentRange(row);
        return `<tr class="${bad ? "monitor-bad" : ""}" data-name="${escapeHtml(row.name)}">
          <td class="monitor-name">${escapeHtml(row.name)}</td>
          <td>${escapeHtml(ROLE_LABELS[row.role] ?? row.role)}</td>
          <td class="num monitor-latest" title="${escapeHtml(row.latest.map(formatStat).join(", "))}">${escapeHtml(latestText(row.latest))}</td>
          <td class="num">${escapeHtml(String(row.batch))}</td>
          <td class="num">${range ? escapeHtml(formatStat(range.min)) : "–"}</td>
          <td class="num">${range ? escapeHtml(formatStat(range.max)) : "–"}</td>
          <td>${sparkline(row)}</td>
        </tr>`;
      })
      .join("");
    this.host.innerHTML = `<table class="monitor-table">
      <thead><tr><th>array</th><th>role</th><th class="num">latest</th><th class="num">batch</th>
        <th class="num" title="over the last ${RECENT} records">min</th><th class="num" title="over the last ${RECENT} records">max</th>
        <th title="the last ${RECENT} records">trend</th></tr></thead>
      <tbody>${body}</tbody></table>`;
  }
}
