// The engine timeline: one lane per worker, one bar per operation, coloured by operator; under
// the workers, one lane per track of the program's own instrumentation (mx.profiler.Task, Frame,
// Event as ranges, Counter as a step line, Marker as a vertical tick: see usertracks.js).
// d3 provides the scales, the axis and the zoom behaviour; bars are SVG rects carrying
// data-op / data-worker so that tests (and curious users in devtools) can find them.
import d3 from "d3";
import { colorFor, colorsFor, operatorKind, renderLegend } from "./colors.js";
import { escapeHtml, formatMs } from "./format.js";
import { noRunText, suggestion } from "./catalogue.js";
import { EVICTED_PANEL_TEXT, isEvicted } from "./eviction.js";

const LANE_HEIGHT = 26;
const AXIS_HEIGHT = 28;
const LABEL_WIDTH = 170;
const MARGIN_RIGHT = 16;
const MAX_LABELLED_BARS = 1500;
// While a run is in progress the timeline follows its latest seconds (a run that repeats until
// stopped would otherwise shrink into a smear); once it has finished the whole run is shown.
export const LIVE_WINDOW_MS = 3000;

/** Workers sorted by device, then pool, then index: cpu(0)/normal/0, cpu(0)/normal/1, cpu(0)/copy/0, ... */
function sortWorkers(workers) {
  const key = (w) => w.replace(/\d+/g, (d) => d.padStart(6, "0"));
  return [...workers].sort((a, b) => key(a).localeCompare(key(b)));
}

export class Timeline {
  constructor({ host, legend, detail, resetButton }) {
    this.host = host;
    this.legend = legend;
    this.detail = detail;
    this.model = null;
    this.transform = d3.zoomIdentity;
    this.pinned = null;
    this.focused = null;
    this.related = null;
    this.svg = d3.select(host).append("svg").attr("class", "timeline").attr("tabindex", 0);
    this.svg.attr("aria-label", "Engine timeline: wheel to zoom, drag to pan, 0 to reset");
    const defs = this.svg.append("defs");
    defs.append("clipPath").attr("id", "timeline-clip").append("rect");
    defs
      .append("marker")
      .attr("id", "timeline-arrow")
      .attr("viewBox", "0 0 10 10")
      .attr("refX", 9)
      .attr("refY", 5)
      .attr("markerWidth", 7)
      .attr("markerHeight", 7)
      .attr("orient", "auto-start-reverse")
      .append("path")
      .attr("d", "M0,0L10,5L0,10z");
    this.lanes = this.svg.append("g").attr("class", "lanes");
    this.userLanes = this.svg.append("g").attr("class", "user-lanes");
    this.axisG = this.svg.append("g").attr("class", "axis");
    this.plot = this.svg.append("g").attr("class", "plot").attr("clip-path", "url(#timeline-clip)");
    this.gaps = this.plot.append("g").attr("class", "sampled-gaps"); // where the stream was only sampled
    this.bars = this.plot.append("g").attr("class", "bars");
    this.labels = this.plot.append("g").attr("class", "labels");
    this.arrows = this.plot.append("g").attr("class", "arrows");
    this.userItems = this.plot.append("g").attr("class", "user-items");
    this.empty = d3.select(host).append("div").attr("class", "empty-state");
    this.zoom = d3
      .zoom()
      .scaleExtent([1, 20000])
      .filter((event) => (!event.ctrlKey || event.type === "wheel") && !event.button && event.type !== "dblclick")
      .on("zoom", (event) => {
        // Wheel events come faster than frames: draw once per frame with the latest transform.
        this.transform = event.transform;
        if (this.zoomFrame) return;
        this.zoomFrame = requestAnimationFrame(() => {
          this.zoomFrame = null;
          this.layoutBars();
        });
      });
    this.svg.call(this.zoom);
    this.svg.on("dblclick", () => this.resetZoom());
    this.svg.on("keydown", (event) => this.onKey(event));
    resetButton.addEventListener("click", () => this.resetZoom());
    this.bars.on("mouseover", (event) => {
      const op = this.opFromEvent(event);
      if (op && !this.pinned) this.focus(op);
    });
    this.bars.on("mouseout", () => {
      if (!this.pinned) this.focus(null);
    });
    this.bars.on("click", (event) => {
      const op = this.opFromEvent(event);
      this.pinned = op && this.pinned !== op ? op : null;
      this.focus(op);
    });
    // Redraw when the host's width changes (not on every notification: drawing changes the height).
    this.observedWidth = 0;
    new ResizeObserver(() => {
      const width = host.clientWidth;
      if (width === this.observedWidth) return;
      this.observedWidth = width;
      requestAnimationFrame(() => this.render(true));
    }).observe(host);
  }

  /** The operation bound to the bar under the pointer (d3 keeps each bar's datum on its element). */
  opFromEvent(event) {
    return event.target?.classList?.contains("bar") ? d3.select(event.target).datum() : null;
  }

  setModel(model) {
    this.model = model;
    this.legendKinds = null;
    this.pinned = null;
    this.focused = null;
    this.related = null;
    this.transform = d3.zoomIdentity;
    this.svg.call(this.zoom.transform, d3.zoomIdentity);
    this.drawnVersion = -1;
    this.render(true);
  }

  resetZoom() {
    this.svg.transition().duration(200).call(this.zoom.transform, d3.zoomIdentity);
  }

  onKey(event) {
    const width = this.plotWidth || 1;
    if (event.key === "+" || event.key === "=") this.svg.call(this.zoom.scaleBy, 1.5);
    else if (event.key === "-") this.svg.call(this.zoom.scaleBy, 1 / 1.5);
    else if (event.key === "0") this.resetZoom();
    else if (event.key === "ArrowLeft") this.svg.call(this.zoom.translateBy, width / 10 / this.transform.k, 0);
    else if (event.key === "ArrowRight") this.svg.call(this.zoom.translateBy, -width / 10 / this.transform.k, 0);
    else if (event.key === "Escape") {
      this.pinned = null;
      this.focus(null);
    } else return;
    event.preventDefault();
  }

  /** Redraw from the model; cheap when nothing changed since the last call. */
  render(force = false) {
    const model = this.model;
    if (!force && model && this.drawnVersion === model.version && model.finished) return;
    this.drawnVersion = model?.version;
    const width = Math.max(this.host.clientWidth, 320);
    const ops = model ? model.order.filter((op) => op.tStart !== null) : [];
    const workers = model ? sortWorkers(model.workers) : [];
    const pending = model ? model.order.length - ops.length : 0;
    const tracks = model ? model.userTracks.names() : [];
    const shown = ops.length > 0 || tracks.length > 0;
    this.empty.style("display", shown ? "none" : null).html(
      !model
        ? noRunText("timeline", "to watch the engine's workers")
        : isEvicted(model.summary)
          ? EVICTED_PANEL_TEXT
          : model.finished
            ? `This run pushed no engine operations. ${suggestion("timeline", "to watch the engine's workers")}`
            : `Waiting for the first operation to start… (${pending} pushed)`,
    );
    const workerRows = Math.max(workers.length, 1);
    const height = AXIS_HEIGHT + (workerRows + tracks.length) * LANE_HEIGHT + 8;
    this.plotWidth = width - LABEL_WIDTH - MARGIN_RIGHT;
    this.svg.attr("width", width).attr("height", shown ? height : 0);
    this.svg.select("#timeline-clip rect").attr("width", this.plotWidth).attr("height", height);
    this.plot.attr("transform", `translate(${LABEL_WIDTH},${AXIS_HEIGHT})`);
    this.axisG.attr("transform", `translate(${LABEL_WIDTH},${AXIS_HEIGHT - 2})`);
    let end = Math.max(model?.now ?? 0, 1e-3);
    for (const op of ops) if (op.tEnd !== null && op.tEnd > end) end = op.tEnd;
    this.trackRow = new Map(tracks.map((name, i) => [name, workerRows + i]));
    const following = Boolean(model && !model.finished && end > LIVE_WINDOW_MS);
    this.svg.attr("data-following", String(following));
    this.baseX = d3
      .scaleLinear()
      .domain([following ? end - LIVE_WINDOW_MS : 0, end])
      .range([0, this.plotWidth]);
    this.laneIndex = new Map(workers.map((w, i) => [w, i]));
    this.zoom.extent([[0, 0], [this.plotWidth, height]]).translateExtent([[0, 0], [this.plotWidth, height]]);

    const lane = this.lanes
      .selectAll("g.lane")
      .data(workers, (w) => w)
      .join((enter) => {
        const g = enter.append("g").attr("class", "lane");
        g.append("rect").attr("class", "lane-bg");
        g.append("text").attr("class", "lane-label").attr("x", 8).attr("dy", "0.35em");
        return g;
      });
    lane.attr("transform", (w, i) => `translate(0,${AXIS_HEIGHT + i * LANE_HEIGHT})`).attr("data-worker", (w) => w);
    lane.select("rect").attr("width", width).attr("height", LANE_HEIGHT);
    lane
      .select("text")
      .attr("y", LANE_HEIGHT / 2)
      .text((w) => w);
    const userLane = this.userLanes
      .selectAll("g.user-lane")
      .data(tracks, (name) => name)
      .join((enter) => {
        const g = enter.append("g").attr("class", "user-lane");
        g.append("rect").attr("class", "lane-bg");
        g.append("text").attr("class", "lane-label").attr("x", 8).attr("dy", "0.35em");
        return g;
      });
    userLane
      .attr("transform", (name) => `translate(0,${AXIS_HEIGHT + this.trackRow.get(name) * LANE_HEIGHT})`)
      .attr("data-track", (name) => name);
    userLane.select("rect").attr("width", width).attr("height", LANE_HEIGHT);
    userLane
      .select("text")
      .attr("y", LANE_HEIGHT / 2)
      .text((name) => `⟨${name}⟩`);

    this.ops = ops;
    const kinds = [...new Set(ops.map((op) => operatorKind(op.name)))];
    if (kinds.join("\n") !== this.legendKinds) {
      this.legendKinds = kinds.join("\n");
      this.colors = colorsFor(kinds);
      renderLegend(this.legend, kinds, "Operators", this.colors);
    }
    this.layoutBars();
    if (this.pinned) this.focus(this.pinned);
  }

  /**
   * Draw the bars inside the current zoom window. Only operations overlapping the visible time range
   * are in the DOM, so zooming into a run of thousands of operations stays smooth.
   */
  layoutBars() {
    if (!this.baseX || !this.model) return;
    const x = this.transform.rescaleX(this.baseX);
    this.x = x;
    const now = this.model.now;
    const [t0, t1] = x.domain();
    const visible = (this.ops ?? []).filter((op) => op.tStart <= t1 && (op.tEnd ?? now) >= t0);
    const related = this.related;
    const laneY = (op) => (this.laneIndex.get(op.worker) ?? 0) * LANE_HEIGHT;
    const width = (op) => Math.max(1, x(op.tEnd ?? now) - x(op.tStart));
    this.axisG.call(
      d3
        .axisTop(x)
        .ticks(Math.max(2, Math.floor(this.plotWidth / 90)))
        .tickFormat((d) => formatMs(d)),
    );
    this.bars
      .selectAll("rect.bar")
      .data(visible, (op) => op.id)
      .join("rect")
      .attr("class", (op) => `bar${op.tEnd === null ? " running" : ""}${op.error ? " failed" : ""}`)
      .classed("dim", (op) => related !== null && !related.has(op.id))
      .classed("focused", (op) => op === this.focused)
      .attr("data-op", (op) => op.id)
      .attr("data-worker", (op) => op.worker)
      .attr("data-name", (op) => op.name)
      .attr("fill", (op) => this.colors?.get(operatorKind(op.name)) ?? colorFor(operatorKind(op.name)))
      .attr("x", (op) => x(op.tStart))
      .attr("y", (op) => laneY(op) + 3)
      .attr("height", LANE_HEIGHT - 6)
      .attr("width", width);
    // Names inside the bars wide enough to hold them.
    const labelled = visible.length <= MAX_LABELLED_BARS ? visible.filter((op) => width(op) > 7 * op.name.length + 6) : [];
    this.labels
      .selectAll("text.bar-label")
      .data(labelled, (op) => op.id)
      .join("text")
      .attr("class", "bar-label")
      .attr("dy", "0.35em")
      .text((op) => op.name)
      .attr("x", (op) => x(op.tStart) + 3)
      .attr("y", (op) => laneY(op) + LANE_HEIGHT / 2);
    this.drawGaps(x, t0, t1);
    this.drawUserTracks(x, t0, t1);
    if (this.focused) this.drawArrows(this.focused);
  }

  /** Hatched bands where the server left events out for this page (it fell behind): a sample, not all. */
  drawGaps(x, t0, t1) {
    const height = (this.laneIndex?.size || 1) * LANE_HEIGHT + (this.trackRow?.size ?? 0) * LANE_HEIGHT;
    const gaps = this.model.sampledRanges().filter((g) => g.tFrom <= t1 && g.tTo >= t0);
    this.gaps
      .selectAll("rect.sampled-gap")
      .data(gaps)
      .join((enter) => {
        const rect = enter.append("rect").attr("class", "sampled-gap");
        rect.append("title");
        return rect;
      })
      .attr("data-events", (g) => g.events)
      .attr("x", (g) => x(g.tFrom))
      .attr("y", 0)
      .attr("height", height)
      .attr("width", (g) => Math.max(2, x(g.tTo) - x(g.tFrom)))
      .select("title")
      .text((g) => `${g.events} events not shown here: your browser fell behind, so the server sent a sample`);
  }

  /** The instrumentation tracks inside the zoom window: ranges, counter step lines, markers. */
  drawUserTracks(x, t0, t1) {
    const model = this.model;
    const now = model.now;
    const ranges = [];
    const markers = [];
    const counters = [];
    for (const [name, row] of this.trackRow ?? []) {
      const track = model.userTracks.tracks.get(name);
      const y = row * LANE_HEIGHT;
      for (const r of track.ranges) if (r.tStart <= t1 && (r.tEnd ?? now) >= t0) ranges.push({ r, y, track: name });
      for (const m of track.markers) if (m.t >= t0 && m.t <= t1) markers.push({ m, y, track: name });
      for (const [counter, points] of track.counters) counters.push({ counter, points, y, track: name });
    }
    const at = (t) => x(t);
    this.userItems
      .selectAll("rect.user-range")
      .data(ranges, (d) => `${d.track}/${d.r.id}`)
      .join((enter) => {
        const rect = enter.append("rect").attr("class", "user-range");
        rect.append("title");
        return rect;
      })
      .classed("running", (d) => d.r.tEnd === null)
      .attr("data-track", (d) => d.track)
      .attr("data-name", (d) => d.r.name)
      .attr("x", (d) => at(d.r.tStart))
      .attr("y", (d) => d.y + 5)
      .attr("height", LANE_HEIGHT - 10)
      .attr("width", (d) => Math.max(1, at(d.r.tEnd ?? now) - at(d.r.tStart)))
      .select("title")
      .text((d) => `${d.r.name}: ${d.r.tEnd === null ? "still open" : formatMs(d.r.tEnd - d.r.tStart)} (${d.r.thread})`);
    this.userItems
      .selectAll("line.user-marker")
      .data(markers, (d) => `${d.track}/${d.m.t}/${d.m.name}`)
      .join((enter) => {
        const line = enter.append("line").attr("class", "user-marker");
        line.append("title");
        return line;
      })
      .attr("data-track", (d) => d.track)
      .attr("data-name", (d) => d.m.name)
      .attr("x1", (d) => at(d.m.t))
      .attr("x2", (d) => at(d.m.t))
      .attr("y1", (d) => d.y + 2)
      .attr("y2", (d) => d.y + LANE_HEIGHT - 2)
      .select("title")
      .text((d) => `${d.m.name} (${d.m.scope}) at ${formatMs(d.m.t)}`);
    // A counter as a step line scaled to its own range within the lane.
    const stepPath = ({ points, y }) => {
      const values = points.map((p) => p.value);
      const low = Math.min(...values);
      const span = Math.max(...values) - low || 1;
      const yOf = (v) => y + LANE_HEIGHT - 4 - ((v - low) / span) * (LANE_HEIGHT - 8);
      let d = "";
      points.forEach((p, i) => {
        const px = at(p.t);
        d += i === 0 ? `M${px},${yOf(p.value)}` : `H${px}V${yOf(p.value)}`;
      });
      return `${d}H${at(now)}`;
    };
    this.userItems
      .selectAll("path.user-counter")
      .data(counters, (d) => `${d.track}/${d.counter}`)
      .join((enter) => {
        const path = enter.append("path").attr("class", "user-counter");
        path.append("title");
        return path;
      })
      .attr("data-track", (d) => d.track)
      .attr("data-name", (d) => d.counter)
      .attr("d", stepPath)
      .select("title")
      .text((d) => `${d.counter} = ${d.points[d.points.length - 1].value}`);
  }

  /** Show details of `op` and arrows from the operations it waited for (null clears). */
  focus(op) {
    this.focused = op;
    this.related = null;
    this.bars.selectAll("rect.bar").classed("dim", false).classed("focused", false);
    this.arrows.selectAll("*").remove();
    if (!op) {
      this.detail.classList.add("muted");
      this.detail.textContent = "Hover or click a bar for its details.";
      return;
    }
    const model = this.model;
    const deps = op.waitsFor.map((id) => model.ops.get(id)).filter(Boolean);
    const related = new Set([op.id, ...deps.map((d) => d.id)]);
    this.related = related;
    this.bars
      .selectAll("rect.bar")
      .classed("dim", (o) => !related.has(o.id))
      .classed("focused", (o) => o.id === op.id);
    this.drawArrows(op);
    const readyAt = Math.max(op.tPush, ...deps.map((d) => d.tEnd ?? op.tPush));
    const vars = (list) => (list.length ? list.map((v) => escapeHtml(model.varLabel(v))).join(", ") : "none");
    const depText = deps.length
      ? deps.map((d) => `${escapeHtml(d.name)} <span class="muted">(op ${d.id})</span>`).join(", ")
      : "nothing (it could start as soon as a worker was free)";
    this.detail.classList.remove("muted");
    this.detail.innerHTML = `
      <b>${escapeHtml(op.name)}</b> <span class="muted">op ${op.id} · ${escapeHtml(op.worker ?? "")} · ${escapeHtml(op.prop ?? "")}</span>
      ${this.pinned ? '<span class="pin">pinned — click again or Esc to release</span>' : ""}<br>
      reads ${vars(op.reads)} · writes ${vars(op.writes)}<br>
      waited for ${depText}<br>
      pushed at ${formatMs(op.tPush)} · dependencies done at ${formatMs(readyAt)} · started ${formatMs(op.tStart)}
      (queued ${formatMs(op.tStart - readyAt)} for a worker) · ran ${op.tEnd === null ? "…still running" : formatMs(op.tEnd - op.tStart)}
      ${op.error ? `<br><span class="error">error: ${escapeHtml(op.error)}</span>` : ""}`;
  }

  drawArrows(op) {
    this.arrows.selectAll("*").remove();
    if (!this.x) return;
    const x = this.x;
    const yOf = (o) => (this.laneIndex.get(o.worker) ?? 0) * LANE_HEIGHT + LANE_HEIGHT / 2;
    const links = op.waitsFor
      .map((id) => this.model.ops.get(id))
      .filter((d) => d && d.tStart !== null)
      .map((d) => ({ from: d, to: op }));
    this.arrows
      .selectAll("path")
      .data(links)
      .join("path")
      .attr("class", "dep-arrow")
      .attr("marker-end", "url(#timeline-arrow)")
      .attr("d", ({ from, to }) => {
        const x1 = x(from.tEnd ?? this.model.now);
        const y1 = yOf(from);
        const x2 = x(to.tStart);
        const y2 = yOf(to);
        if (y1 === y2) {
          // Same lane: arc over the bars so that the arrow is not hidden behind them.
          const top = y1 - LANE_HEIGHT / 2 - 2;
          return `M${x1},${y1 - 4} C${x1 + 6},${top - 6} ${x2 - 6},${top - 6} ${x2},${y2 - 4}`;
        }
        const bend = Math.max(12, Math.abs(x2 - x1) / 2);
        return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
      });
  }
}
