// The program's own instrumentation (mx.profiler.Domain, Task, Frame, Event, Counter, Marker),
// folded from its `profiler.*` events into tracks that the timeline draws under the engine's lanes.
// Track names follow MXNet's trace: "<domain>" for tasks and counters, "<domain>,frame",
// "<domain>,instant_marker", and "event" for events without a domain.

/** The track an instrumentation event belongs to. */
export function trackOf(event) {
  const kind = event.kind;
  if (kind.startsWith("profiler.event_")) return "event";
  if (kind.startsWith("profiler.frame_")) return `${event.domain},frame`;
  if (kind === "profiler.marker") return `${event.domain},instant_marker`;
  return String(event.domain);
}

export class UserTracks {
  constructor() {
    this.tracks = new Map(); // track name -> { name, ranges: [], markers: [], counters: Map(name -> [{t, value}]) }
    this.open = new Map(); // range id -> the range still waiting for its end
  }

  get size() {
    return this.tracks.size;
  }

  track(name) {
    let track = this.tracks.get(name);
    if (!track) {
      track = { name, ranges: [], markers: [], counters: new Map() };
      this.tracks.set(name, track);
    }
    return track;
  }

  /** Fold one `profiler.*` event (t: ms since the run's first event); false for other kinds. */
  add(event, t) {
    const kind = event.kind;
    if (!kind.startsWith("profiler.")) return false;
    const track = this.track(trackOf(event));
    if (kind.endsWith("_begin")) {
      const range = { name: String(event.name), tStart: t, tEnd: null, id: event.range, thread: event.thread };
      track.ranges.push(range);
      this.open.set(event.range, range);
    } else if (kind.endsWith("_end")) {
      const range = this.open.get(event.range);
      if (range) {
        range.tEnd = t;
        this.open.delete(event.range);
      }
    } else if (kind === "profiler.counter") {
      const name = String(event.name);
      if (!track.counters.has(name)) track.counters.set(name, []);
      track.counters.get(name).push({ t, value: Number(event.value) });
    } else if (kind === "profiler.marker") {
      track.markers.push({ name: String(event.name), t, scope: event.scope });
    }
    return true;
  }

  /** Track names in a stable order: by domain, then the domain's frames and markers after it. */
  names() {
    return [...this.tracks.keys()].sort((a, b) => a.localeCompare(b));
  }
}
