// Everything the panels show about one run, folded incrementally from its event stream.
// Panels read from a RunModel; they never look at raw events. Times are milliseconds since the
// run's first event (the worker's perf_counter_ns clock).
import { DependencyTracker } from "./dependencies.js";
import { decodeFrame, leftOut } from "./frames.js";
import { addKVStoreEvent } from "./kvstore.js";
import { MonitorStats } from "./monitorstats.js";
import { UserTracks } from "./usertracks.js";

export const FINAL_STATUSES = new Set(["done", "failed", "cancelled", "timeout"]);

export class RunModel {
  constructor(summary) {
    this.summary = summary;
    this.t0 = null;
    this.now = 0; // time of the latest event, ms
    this.eventCount = 0;
    this.nextSeq = 0; // stream index after the last frame folded in
    this.dropped = 0; // events the server left out for this page (it fell behind), in all ...
    this.droppedKinds = {}; // ... and per kind
    this.gaps = []; // time ranges in which events were left out: { tFrom, tTo, events }
    this.openGap = null; // the gap still going on (closed by the next whole frame)
    this.version = 0; // bumped on every change so panels can skip redundant redraws
    this.ops = new Map(); // op id -> operation record
    this.order = []; // operation records in push order
    this.workers = new Set();
    this.varNames = new Map();
    this.tracker = new DependencyTracker();
    this.memory = { t: [], inUse: [], pooled: [], inUseNow: 0, pooledNow: 0, peak: 0, hits: 0, misses: 0, frees: 0 };
    this.handleBytes = new Map();
    this.plans = [];
    this.metrics = new Map(); // metric name -> { phase, x: [], y: [] }
    this.trainStep = 0;
    this.lastTrainKey = null;
    this.kvstore = { push: 0, pull: 0, bytes: 0, steps: [] }; // folded by kvstore.js
    this.userTracks = new UserTracks(); // mx.profiler's Task/Frame/Event/Counter/Marker
    this.monitor = new MonitorStats(); // mx.mon.Monitor's statistics, one row per array
  }

  get status() {
    return this.summary?.status ?? "unknown";
  }

  get finished() {
    return FINAL_STATUSES.has(this.status);
  }

  time(tNs) {
    if (this.t0 === null) this.t0 = tNs;
    return (tNs - this.t0) / 1e6;
  }

  /**
   * Fold the frames of one message into the model. A frame seen before (the history sent again
   * after a reconnect) is skipped; a jump in `seq` or a thinned frame opens a gap, which the next
   * whole frame closes, so the timeline can show where the stream was only sampled.
   */
  addFrames(frames, dropped = this.dropped, droppedKinds = this.droppedKinds) {
    for (const frame of frames) {
      if (frame.seq + frame.n <= this.nextSeq) continue;
      const missing = Math.max(0, frame.seq - this.nextSeq) + leftOut(frame);
      if (missing > 0 && this.t0 !== null) {
        this.openGap ??= { tFrom: this.now, tTo: null, events: 0 };
        this.openGap.events += missing;
      }
      const events = decodeFrame(frame);
      if (this.openGap && missing === 0 && events.length) {
        this.openGap.tTo = Math.max(this.openGap.tFrom, this.time(events[0].t_ns));
        this.gaps.push(this.openGap);
        this.openGap = null;
      }
      for (const event of events) this.addEvent(event);
      this.nextSeq = frame.seq + frame.n;
    }
    this.dropped = dropped;
    this.droppedKinds = droppedKinds;
    this.version += 1;
  }

  /** The gaps to draw, the open one ending now. */
  sampledRanges() {
    return this.openGap ? [...this.gaps, { ...this.openGap, tTo: this.now }] : this.gaps;
  }

  /** Fold a batch of events (in order) into the model. */
  addEvents(events) {
    for (const event of events) this.addEvent(event);
    this.version += 1;
  }

  addEvent(event) {
    if (!event || typeof event.kind !== "string" || typeof event.t_ns !== "number") return;
    const t = this.time(event.t_ns);
    if (t > this.now) this.now = t;
    this.eventCount += 1;
    switch (event.kind) {
      case "engine.var_new":
        this.varNames.set(event.var, event.name);
        break;
      case "engine.push":
        this.onPush(event, t);
        break;
      case "engine.start": {
        const op = this.ops.get(event.op);
        if (!op) break; // pushed before the subscription began
        op.tStart = t;
        op.worker = String(event.worker);
        op.stream = event.stream;
        this.workers.add(op.worker);
        break;
      }
      case "engine.end": {
        const op = this.ops.get(event.op);
        if (!op) break;
        op.tEnd = t;
        op.error = event.error ?? null;
        if (op.worker === null) {
          op.worker = String(event.worker);
          this.workers.add(op.worker);
        }
        break;
      }
      case "storage.alloc":
        this.onAlloc(event, t);
        break;
      case "storage.free":
        this.onFree(event, t);
        break;
      case "executor.plan":
        this.plans.push({ ...event, t });
        break;
      case "train.metric":
        this.onMetric(event);
        break;
      case "monitor.stat":
        this.monitor.add(event);
        break;
      case "kvstore.push":
      case "kvstore.pull":
      case "kvstore.step":
        addKVStoreEvent(this.kvstore, event);
        break;
      default:
        this.userTracks.add(event, t);
        break;
    }
  }

  onPush(event, t) {
    const reads = Array.isArray(event.reads) ? event.reads : [];
    const writes = Array.isArray(event.writes) ? event.writes : [];
    const op = {
      id: event.op,
      index: this.order.length,
      name: String(event.name ?? `op ${event.op}`),
      ctx: event.ctx,
      prop: event.prop,
      priority: event.priority,
      reads,
      writes,
      tPush: t,
      tStart: null,
      tEnd: null,
      worker: null,
      stream: null,
      error: null,
      waitsFor: this.tracker.push(event.op, reads, writes),
    };
    this.ops.set(op.id, op);
    this.order.push(op);
  }

  onAlloc(event, t) {
    const bytes = Number(event.rounded ?? event.nbytes) || 0;
    const m = this.memory;
    this.handleBytes.set(event.handle, bytes);
    m.inUseNow += bytes;
    if (event.pool_hit) {
      m.hits += 1;
      m.pooledNow = Math.max(0, m.pooledNow - bytes); // a block pooled before the run started may be reused
    } else {
      m.misses += 1;
    }
    m.peak = Math.max(m.peak, m.inUseNow);
    this.sampleMemory(t);
  }

  onFree(event, t) {
    const m = this.memory;
    const bytes = this.handleBytes.get(event.handle);
    m.frees += 1;
    if (bytes === undefined) return; // allocated before this run's events began: not counted
    this.handleBytes.delete(event.handle);
    m.inUseNow -= bytes;
    if (event.pooled) m.pooledNow += bytes;
    this.sampleMemory(t);
  }

  sampleMemory(t) {
    const m = this.memory;
    m.t.push(t);
    m.inUse.push(m.inUseNow);
    m.pooled.push(m.pooledNow);
  }

  onMetric(event) {
    const name = String(event.name);
    const phase = event.phase ?? (name.startsWith("validation") ? "validation" : "train");
    if (phase !== "validation") {
      const key = `${event.epoch}/${event.batch}`;
      if (key !== this.lastTrainKey) {
        this.trainStep += 1;
        this.lastTrainKey = key;
      }
    }
    let series = this.metrics.get(name);
    if (!series) {
      series = { name, phase, x: [], y: [], epoch: [] };
      this.metrics.set(name, series);
    }
    const value = Number(event.value);
    series.x.push(this.trainStep);
    series.y.push(Number.isFinite(value) ? value : null);
    series.epoch.push(event.epoch);
  }

  /** State of an operation for the dependency view. */
  opState(op) {
    if (op.tEnd !== null) return op.error ? "failed" : "done";
    if (op.tStart !== null) return "running";
    const blocked = op.waitsFor.some((id) => {
      const dep = this.ops.get(id);
      return dep && dep.tEnd === null;
    });
    return blocked ? "waiting" : "ready";
  }

  /** Name of an engine variable for display. */
  varLabel(v) {
    const name = this.varNames.get(v);
    return name ? `${name} (#${v})` : `#${v}`;
  }
}
