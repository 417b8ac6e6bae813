// Frames: how the server sends events (server/frames.py, docs/server.md "The WebSocket").
// A frame holds consecutive events grouped by kind into blocks of column arrays: `i` gives each
// row's place in the frame, `t_ns` its time, and each field is an array with one value per row
// or {all: value} when every row holds the same value. Decoding puts the events back in the
// order they were published; places left empty (events left out for a slow client) are skipped.

/** The events of one frame, as `{kind, t_ns, ...fields}` objects in publication order. */
export function decodeFrame(frame) {
  const rows = new Array(frame.n);
  for (const block of frame.blocks) {
    const names = Object.keys(block.fields);
    const columns = names.map((name) => block.fields[name]);
    const constant = columns.map((column) => !Array.isArray(column));
    for (let j = 0; j < block.n; j++) {
      const event = { kind: block.kind, t_ns: block.t_ns[j] };
      for (let f = 0; f < names.length; f++) event[names[f]] = constant[f] ? columns[f].all : columns[f][j];
      rows[block.i[j]] = event;
    }
  }
  return rows.filter((event) => event !== undefined);
}

/** How many events a frame had but does not hold (thinned for a client that fell behind). */
export function leftOut(frame) {
  let n = 0;
  for (const count of Object.values(frame.dropped ?? {})) n += Number(count) || 0;
  return n;
}
