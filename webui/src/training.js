// Training curves: train.metric events grouped by metric name into a loss chart and an
// accuracy (and other metrics) chart, both with training batches on the x axis; below them the
// Monitor table of mx.mon.Monitor's statistics (monitortable.js).
import { LineChart } from "./charts.js";
import { colorsFor } from "./colors.js";
import { escapeHtml } from "./format.js";
import { noRunText, suggestion } from "./catalogue.js";
import { EVICTED_PANEL_TEXT, isEvicted } from "./eviction.js";
import { MonitorTable } from "./monitortable.js";

const LOSS = /loss|entropy|ce$|mse|mae|nll|perplexity/i;

function chart(host, title, yLabel) {
  return { host, title, yLabel, chart: null, names: "" };
}

export class TrainingView {
  constructor({ lossHost, accuracyHost, stats, monitorHost, monitorNote }) {
    this.stats = stats;
    this.monitorTable = new MonitorTable({ host: monitorHost, note: monitorNote });
    this.groups = [chart(lossHost, "Loss", "loss"), chart(accuracyHost, "Accuracy and other metrics", "value")];
    this.empty = document.createElement("div");
    this.empty.className = "empty-state";
    lossHost.before(this.empty);
    this.model = null;
  }

  setModel(model) {
    this.model = model;
    this.render();
  }

  render() {
    const model = this.model;
    const series = model ? [...model.metrics.values()] : [];
    this.empty.style.display = series.length || model?.monitor.size ? "none" : "";
    this.empty.innerHTML = !model
      ? noRunText("training", "to watch loss and accuracy")
      : isEvicted(model.summary)
        ? EVICTED_PANEL_TEXT
        : model.finished
          ? `This run reported no training metrics. ${suggestion("training", "to train a network")}`
          : "No metric reported yet…";
    // Without a run, or with its history evicted, the empty state above already says why.
    const monitorEmpty =
      !model || isEvicted(model.summary)
        ? ""
        : model.finished
          ? "This run installed no <code>mx.mon.Monitor</code>."
          : "No monitor statistics yet: they appear when the run's <code>mx.mon.Monitor</code> records a batch.";
    this.monitorTable.render(model?.monitor ?? null, monitorEmpty);
    // One colour per metric name across both charts (train and validation never share one).
    this.colors = colorsFor(series.map((s) => s.name));
    const [lossGroup, otherGroup] = this.groups;
    const split = [series.filter((s) => LOSS.test(s.name)), series.filter((s) => !LOSS.test(s.name))];
    [lossGroup, otherGroup].forEach((group, i) => this.renderGroup(group, split[i]));
    this.stats.innerHTML = series
      .map((s) => {
        const last = s.y[s.y.length - 1];
        return `<div class="stat"><span class="stat-value">${last == null ? "–" : last.toFixed(4)}</span><span class="stat-label">${escapeHtml(s.name)} (epoch ${escapeHtml(String(s.epoch[s.epoch.length - 1]))})</span></div>`;
      })
      .join("");
  }

  renderGroup(group, series) {
    group.host.style.display = series.length ? "" : "none";
    if (!series.length) {
      group.host.dataset.points = "0";
      return;
    }
    const names = series.map((s) => `${s.name}=${this.colors.get(s.name)}`).join("|");
    if (!group.chart || group.names !== names) {
      // The set of metrics changed (a validation metric arrived): rebuild the chart with the new series.
      group.host.replaceChildren();
      group.names = names;
      group.chart = new LineChart(group.host, {
        title: group.title,
        xLabel: "training batches",
        yLabel: group.yLabel,
        xFormat: (v) => String(Math.round(v)),
        yFormat: (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)),
        series: series.map((s) =>
          s.phase === "validation"
            ? { label: s.name, stroke: this.colors.get(s.name), width: 2, dash: [6, 4], points: { show: true, size: 7 } }
            : { label: s.name, stroke: this.colors.get(s.name), width: 1.5 },
        ),
      });
    }
    // uPlot wants aligned columns: one sorted x array, each series with null where it has no value.
    const xs = [...new Set(series.flatMap((s) => s.x))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = series.map((s) => {
      const column = new Array(xs.length).fill(null);
      s.x.forEach((x, i) => (column[index.get(x)] = s.y[i]));
      return column;
    });
    group.chart.setData([xs, ...columns]);
  }
}
