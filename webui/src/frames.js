// Frames: how the server sends events (server/frames.py, docs/server.md "The WebSocket").
// A frame holds consecutive events grouped by kind into blocks of columns: `i` gives each row's
// place in the frame, `t_ns` its time, and each field one value per row. A column is an array,
// or {all: v} when every row holds v, or {from: a, step: s} when row j holds a + j*s, or
// {from: a, deltas: [d1, ...]} when row j holds a + d1 + ... + dj (integers, all exact: the
// server sends these forms only below 2**53). Decoding puts the events back in the order they
// were published; places left empty (events left out for a slow client) are skipped.

/** The `n` values of a column in one of its compact integer forms, as an array; null for {all: v}. */
function expandColumn(column, n) {
  if (Array.isArray(column)) return column;
  if ("step" in column) {
    const values = new Array(n);
    for (let j = 0, v = column.from; j < n; j++, v += column.step) values[j] = v;
    return values;
  }
  if ("deltas" in column) {
    const values = new Array(n);
    let v = column.from;
    values[0] = v;
    for (let j = 1; j < n; j++) values[j] = v += column.deltas[j - 1];
    return values;
  }
  if ("all" in column) return null;
  throw new Error(`frame: a column is an array, all, step or deltas; got the keys ${Object.keys(column)}`);
}

/** The events of one frame, as `{kind, t_ns, ...fields}` objects in publication order. */
export function decodeFrame(frame) {
  const rows = new Array(frame.n);
  for (const block of frame.blocks) {
    const n = block.n;
    const places = expandColumn(block.i, n);
    const times = expandColumn(block.t_ns, n);
    const names = Object.keys(block.fields);
    const columns = names.map((name) => expandColumn(block.fields[name], n));
    const constants = names.map((name) => block.fields[name].all);
    for (let j = 0; j < n; j++) {
      const event = { kind: block.kind, t_ns: times[j] };
      for (let f = 0; f < names.length; f++) event[names[f]] = columns[f] === null ? constants[f] : columns[f][j];
      rows[places[j]] = event;
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
