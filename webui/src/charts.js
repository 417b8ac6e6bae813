// A thin wrapper around uPlot for the time-series panels: created lazily when its host is visible
// (uPlot needs a width), resized with its host, and fed whole data arrays on every update.
import uPlot from "uplot";

export class LineChart {
  /**
   * @param host element the chart lives in; its data-points attribute tracks the number of x values
   * @param options { title, xLabel, yLabel, series: [{label, stroke, points?, dash?}], yFormat, xFormat }
   */
  constructor(host, options) {
    this.host = host;
    this.options = options;
    this.plot = null;
    this.data = [[], ...options.series.map(() => [])];
    this.observedWidth = 0;
    new ResizeObserver(() => {
      if (host.clientWidth === this.observedWidth) return;
      this.observedWidth = host.clientWidth;
      requestAnimationFrame(() => this.fit());
    }).observe(host);
  }

  width() {
    return Math.max(0, this.host.clientWidth - 4);
  }

  ensure() {
    if (this.plot || this.width() === 0) return;
    const { title, xLabel, yLabel, series, yFormat, xFormat } = this.options;
    const fmtY = (u, values) => values.map((v) => (v == null ? "" : yFormat ? yFormat(v) : String(v)));
    const fmtX = (u, values) => values.map((v) => (v == null ? "" : xFormat ? xFormat(v) : String(v)));
    this.plot = new uPlot(
      {
        title,
        width: this.width(),
        height: 260,
        scales: { x: { time: false } },
        legend: { live: true },
        cursor: { drag: { x: true, y: false } },
        axes: [
          { label: xLabel, values: fmtX, stroke: "#555" },
          { label: yLabel, values: fmtY, size: 72, stroke: "#555" },
        ],
        series: [
          { label: xLabel, value: (u, v) => (v == null ? "–" : xFormat ? xFormat(v) : v) },
          ...series.map((s) => ({
            label: s.label,
            stroke: s.stroke,
            width: s.width ?? 2,
            fill: s.fill,
            dash: s.dash,
            spanGaps: true,
            points: s.points ?? { show: false },
            paths: s.paths,
            value: (u, v) => (v == null ? "–" : yFormat ? yFormat(v) : v),
          })),
        ],
      },
      this.data,
      this.host,
    );
  }

  fit() {
    this.ensure();
    if (this.plot && this.width() > 0) this.plot.setSize({ width: this.width(), height: 260 });
  }

  /** Replace the data: [xs, ys1, ys2, ...] (uPlot's aligned columns). */
  setData(data) {
    this.data = data;
    this.host.dataset.points = String(data[0].length);
    this.ensure();
    if (this.plot) this.plot.setData(data);
  }
}
