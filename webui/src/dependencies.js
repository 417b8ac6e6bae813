// Which earlier operations each pushed operation waits for, from the variables it reads and writes.
// This replays the engine's rule (tutorial 02): a read waits for the last write of the variable; a
// write waits for the reads since the last write (or, if there were none, for the last write).
// Earlier dependencies follow transitively, so each operation keeps only its direct ones.

export class DependencyTracker {
  constructor() {
    this.vars = new Map(); // var id -> { lastWriter, readers: [] }
  }

  state(v) {
    let entry = this.vars.get(v);
    if (!entry) {
      entry = { lastWriter: null, readers: [] };
      this.vars.set(v, entry);
    }
    return entry;
  }

  /** Record a push (in push order) and return the ids of the operations it waits for. */
  push(opId, reads, writes) {
    const writeSet = new Set(writes);
    const waitsFor = new Set();
    for (const v of reads) {
      if (writeSet.has(v)) continue; // read-and-write counts as a write, as in the engine
      const entry = this.state(v);
      if (entry.lastWriter !== null) waitsFor.add(entry.lastWriter);
    }
    for (const v of writeSet) {
      const entry = this.state(v);
      if (entry.readers.length) entry.readers.forEach((r) => waitsFor.add(r));
      else if (entry.lastWriter !== null) waitsFor.add(entry.lastWriter);
    }
    for (const v of reads) if (!writeSet.has(v)) this.state(v).readers.push(opId);
    for (const v of writeSet) {
      const entry = this.state(v);
      entry.lastWriter = opId;
      entry.readers = [];
    }
    waitsFor.delete(opId);
    return [...waitsFor];
  }
}
