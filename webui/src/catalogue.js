// What the server offers, as it says it (GET /api/scenarios and /api/tutorials): the page writes
// no scenario name or tutorial path of its own. Panels suggest scenarios from each scenario's
// "panels" list; tutorial links come from the server's tutorial table.
import { escapeHtml } from "./format.js";

const catalogue = { scenarios: [], tutorials: [], settled: false };

/** Keep what the server listed (called at start-up, before the first run is opened). */
export function setCatalogue({ scenarios = [], tutorials = [] }) {
  catalogue.scenarios = scenarios;
  catalogue.tutorials = tutorials;
}

/** Start-up is over: the page has opened the run it was going to open, or none (see noRunText). */
export function settle() {
  catalogue.settled = true;
}

/** What an empty panel says without a run: "Connecting…" during start-up, never a premature "No run open". */
export function noRunText(panel, purpose) {
  return catalogue.settled ? `No run open. ${suggestion(panel, purpose)}` : "Connecting…";
}

/** The scenarios made to show `panel`, as "<b>a</b>, <b>b</b> or <b>c</b>" ("" when none). */
export function suggest(panel) {
  const names = catalogue.scenarios.filter((s) => (s.panels ?? []).includes(panel)).map((s) => `<b>${escapeHtml(s.name)}</b>`);
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
}

/** A sentence suggesting scenarios for `panel`, e.g. "Run <b>x</b> or <b>y</b> to see it." ("" when none). */
export function suggestion(panel, purpose) {
  const names = suggest(panel);
  return names ? `Run ${names} ${purpose}.` : "";
}

/** The tutorial with this number ("02") or path, from the server's table. */
export function tutorial(numberOrPath) {
  return catalogue.tutorials.find((t) => t.number === numberOrPath || t.path === numberOrPath) ?? null;
}

/** A short reference to a tutorial (its files live in the repository, the server does not serve them). */
export function tutorialHtml(numberOrPath) {
  const found = tutorial(numberOrPath);
  if (!found) return "";
  return `<span class="tutorial-link" title="A file in the MXLab repository">Tutorial ${escapeHtml(found.number)} (${escapeHtml(found.title)}) — <code>${escapeHtml(found.path)}</code></span>`;
}
