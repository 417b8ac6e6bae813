// A finished run whose events the server dropped to stay within its memory budget (the oldest
// finished runs lose theirs first; the summary's `history_evicted` says so, docs/server.md).
// Its status, counts, result and symbol graph are kept, but the panels that are drawn from events
// have nothing to draw and its trace download is empty: every place that would look empty says why.
import { escapeHtml } from "./format.js";

/** True when the server no longer keeps `summary`'s events. */
export function isEvicted(summary) {
  return summary?.history_evicted === true;
}

/** What an event-drawn panel says instead of "this run pushed no operations". */
export const EVICTED_PANEL_TEXT =
  "The server no longer keeps this run's events (see the notice above), so there is nothing to draw here.";

/** The run bar's notice: what is gone, why, what is left and how to see the run again. */
export function evictedNoticeHtml(summary, rerunnable) {
  const again = rerunnable
    ? "Press <b>Re-run with its parameters</b> to watch it again."
    : "Upload its trace file again to replay it.";
  return `<div class="warning" id="run-evicted">History dropped to stay within the server's memory budget (finished runs
    lose their events oldest first): the ${escapeHtml(String(summary.events ?? 0))} events of this run are gone, so the
    timeline, dependency, memory and training panels are empty and there is no trace to download. Its status, event
    counts, result and symbol graph (if it built one) are kept. ${again}</div>`;
}
