// The page: scenario picker and forms, run/stop/replay, the run list, and the six panels fed by
// one RunModel per open run (events arrive over the run's WebSocket and are folded in batches).
import { api, describeError, openEventStream } from "./api.js";
import { DependencyView } from "./dag.js";
import { evictedNoticeHtml, isEvicted } from "./eviction.js";
import { setCatalogue, settle, tutorialHtml } from "./catalogue.js";
import { buildForm } from "./form.js";
import { escapeHtml, formatMs } from "./format.js";
import { GraphView } from "./graph.js";
import { MemoryView } from "./memory.js";
import { RunModel } from "./model.js";
import { Timeline } from "./timeline.js";
import { TrainingView } from "./training.js";
import { KVStoreView } from "./kvstore.js";

const $ = (id) => document.getElementById(id);

const app = {
  scenarios: [],
  readParams: null,
  model: null,
  socket: null,
  activeTab: "timeline",
  dirty: new Set(),
  frame: null,
  mode: "server",
  reconnects: 0,
};

const views = {
  timeline: new Timeline({ host: $("timeline"), legend: $("timeline-legend"), detail: $("timeline-detail"), resetButton: $("timeline-reset") }),
  dag: new DependencyView({ host: $("dag"), legend: $("dag-legend"), note: $("dag-note") }),
  memory: new MemoryView({
    stats: $("memory-stats"),
    chartHost: $("memory-chart"),
    planHost: $("plan"),
    planBytes: $("plan-bytes"),
    planPicker: $("plan-picker"),
    planPickerLabel: $("plan-picker-label"),
  }),
  graph: new GraphView({ host: $("graph"), legend: $("graph-legend"), detail: $("graph-detail") }),
  training: new TrainingView({
    lossHost: $("training-loss"),
    accuracyHost: $("training-accuracy"),
    stats: $("training-stats"),
    monitorHost: $("monitor-table"),
    monitorNote: $("monitor-note"),
  }),
  kvstore: new KVStoreView({ stats: $("kvstore-stats"), host: $("kvstore-steps"), legend: $("kvstore-legend") }),
};

// ---------------------------------------------------------------- rendering
function scheduleRender() {
  for (const name of Object.keys(views)) app.dirty.add(name);
  if (app.frame === null) app.frame = requestAnimationFrame(flush);
}

function flush() {
  app.frame = null;
  renderRunBar();
  if (app.dirty.has(app.activeTab)) {
    app.dirty.delete(app.activeTab);
    views[app.activeTab].render();
  }
}

function selectTab(name) {
  if (!views[name]) return;
  app.activeTab = name;
  for (const button of document.querySelectorAll("[role=tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === name));
  for (const panel of document.querySelectorAll("[role=tabpanel]")) panel.hidden = panel.dataset.panel !== name;
  app.dirty.delete(name);
  views[name].render(true);
}

function renderRunBar() {
  const model = app.model;
  const bar = $("run-bar");
  if (!model) return;
  const s = model.summary ?? {};
  const started = s.started ?? s.created;
  const elapsed = s.ended && started ? (s.ended - started) * 1000 : model.now;
  const counts = Object.entries(s.event_counts ?? {})
    .map(([k, n]) => `${escapeHtml(k)} ${n}`)
    .join(" · ");
  bar.dataset.status = s.status ?? "";
  bar.dataset.run = s.id ?? "";
  // "queued" is the moment between creating the run and its worker process starting.
  const statusText = s.status === "queued" ? "starting…" : (s.status ?? "unknown");
  const evicted = isEvicted(s);
  const untilStopped = s.params?.loop && (s.status === "running" || s.status === "queued");
  bar.innerHTML = `
    <span class="run-title"><b>${escapeHtml(s.scenario ?? "?")}</b> <span class="muted">run ${escapeHtml(s.id ?? "?")}</span></span>
    <span class="badge status-${escapeHtml(s.status ?? "unknown")}" id="run-status">${escapeHtml(statusText)}</span>
    ${untilStopped ? `<span class="muted" id="run-lifetime">repeats until you press Stop or start another run (at most ${Math.round((s.time_limit_s ?? 0) / 60)} min)</span>` : ""}
    <span>${model.eventCount} events · ${model.order.length} operations · ${formatMs(elapsed)}</span>
    ${model.dropped ? `<span class="warning" id="run-dropped" title="Your browser fell behind, so the server sent it a sample: whole frames as often as it kept up, the rare kinds always (${escapeHtml(droppedText(model.droppedKinds))}). For this page only: reload the run to get the full history.">${model.dropped} events dropped</span>` : ""}
    ${s.dropped_at_source ? `<span class="warning" title="The watched process made events faster than the server took them; its bounded buffer dropped these for every viewer.">${s.dropped_at_source} events dropped at the source</span>` : ""}
    ${s.id && !evicted ? `<a href="${api.traceUrl(s.id)}" download title="Chrome trace JSON for Perfetto (ui.perfetto.dev) or chrome://tracing">⤓ trace</a>` : ""}
    ${s.error ? `<div class="error">${escapeHtml(s.error)}</div>` : ""}
    ${evicted ? evictedNoticeHtml(s, canRerun(s)) : ""}
    ${app.connectionProblem ? `<div class="warning">${escapeHtml(app.connectionProblem)}</div>` : ""}
    ${s.result ? `<details class="result"><summary>result${counts ? ` <span class="muted">(${counts})</span>` : ""}</summary><pre>${escapeHtml(JSON.stringify(s.result, null, 2))}</pre></details>` : ""}`;
  const running = s.status === "running" || s.status === "queued";
  $("stop-button").disabled = !running || s.id === "live";
  renderRerun(s);
}

/** "engine.push 700 · engine.end 650": what was left out, per kind. */
function droppedText(kinds) {
  return Object.entries(kinds)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(" · ");
}

// ---------------------------------------------------------------- runs
function closeSocket() {
  if (app.socket) {
    app.socket.onclose = null;
    const socket = app.socket;
    app.socket = null;
    socket.close();
  }
}

async function openRun(id, { keepReconnects = false } = {}) {
  closeSocket();
  if (!keepReconnects) app.reconnects = 0;
  app.connectionProblem = null;
  let summary;
  try {
    summary = await api.run(id);
  } catch (error) {
    $("run-bar").innerHTML = `<span class="error">Cannot open run ${escapeHtml(id)}: ${escapeHtml(describeError(error))}</span>`;
    return;
  }
  // The form shows the open run's scenario and parameters, ready to be run again or changed.
  if (app.mode !== "attach" && app.scenarios.some((s) => s.name === summary.scenario)) {
    selectScenario(summary.scenario, summary.params);
  }
  const model = new RunModel(summary);
  app.model = model;
  setUrl({ run: id });
  for (const view of Object.values(views)) view.setModel(model);
  scheduleRender();
  const socket = openEventStream(id, {
    onHello: (run) => {
      model.summary = run;
      scheduleRender();
    },
    onFrames: (message) => {
      const frames = Array.isArray(message.frames) ? message.frames : [];
      model.addFrames(frames, Number(message.dropped) || 0, message.dropped_kinds ?? {});
      scheduleRender();
    },
    onStatus: (run) => {
      model.summary = run;
      model.version += 1;
      scheduleRender();
      if (model.finished) refreshRunList();
    },
    onProblem: (text) => {
      app.connectionProblem = text;
      scheduleRender();
    },
    onClose: (event) => {
      // A socket the page closed itself (another run was opened) is not a lost connection.
      if (app.model !== model || app.socket !== socket) return;
      app.socket = null;
      if (event.code === 1000 || model.finished) {
        // The server closes after the final status; fetch the summary once more for the result.
        api.run(id).then((run) => {
          if (app.model === model) {
            model.summary = run;
            model.version += 1;
            scheduleRender();
          }
        }, () => {});
        return;
      }
      if (event.code === 4404) app.connectionProblem = `The server no longer has run ${id} (runs are evicted oldest first).`;
      else if (event.code === 4401) app.connectionProblem = "Not authorised: open the URL with ?token=… that the server printed.";
      else if (app.reconnects < 3) {
        app.reconnects += 1;
        app.connectionProblem = `Connection lost (code ${event.code}); reconnecting…`;
        setTimeout(() => app.model === model && openRun(id, { keepReconnects: true }), 1000 * app.reconnects);
      } else app.connectionProblem = `Connection lost (code ${event.code}). Reload the page to try again.`;
      scheduleRender();
    },
  });
  app.socket = socket;
}

/** Redraw the run list from the server; returns the runs (null when the server could not be asked). */
async function refreshRunList() {
  let runs;
  try {
    runs = await api.runs();
  } catch (error) {
    $("run-list").innerHTML = `<li class="error">${escapeHtml(describeError(error))}</li>`;
    return null;
  }
  const list = $("run-list");
  list.replaceChildren();
  if (!runs.length) {
    list.innerHTML = '<li class="muted">No runs yet. Press <b>Start a new run</b> above.</li>';
    return runs;
  }
  for (const run of runs.slice(0, 20)) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "run-item";
    button.dataset.run = run.id;
    button.innerHTML = `<span class="badge status-${escapeHtml(run.status)}">${escapeHtml(run.status)}</span> <b>${escapeHtml(run.scenario)}</b> <span class="muted">${escapeHtml(run.id)}</span>`;
    if (isEvicted(run)) {
      // The server dropped this run's events for its memory budget: say so before it is opened.
      button.classList.add("evicted");
      button.title = "History dropped to stay within the server's memory budget: status, counts and result only";
      button.insertAdjacentHTML("beforeend", ' <span class="muted evicted-note">history dropped</span>');
    }
    button.addEventListener("click", () => openRun(run.id));
    item.append(button);
    list.append(item);
  }
  return runs;
}

// ---------------------------------------------------------------- picker
/** Show `name`'s form, filled with `params` (a run's) or the scenario's defaults. */
function selectScenario(name, params = null) {
  const scenario = app.scenarios.find((s) => s.name === name) ?? app.scenarios[0];
  if (!scenario) return;
  $("scenario-select").value = scenario.name;
  $("scenario-description").textContent = scenario.description ?? "";
  $("scenario-tutorial").innerHTML = scenario.tutorial ? tutorialHtml(scenario.tutorial) : "";
  app.readParams = buildForm($("scenario-form"), scenario.schema, params ?? scenario.defaults);
  if (app.mode === "attach") return;
  $("form-error").textContent = "";
  $("run-button").disabled = false;
}

/** A finished run of a scenario this page can start (not attach mode's live run, not a replay). */
function canRerun(summary) {
  const known = app.mode !== "attach" && app.scenarios.some((s) => s.name === summary.scenario);
  return known && ["done", "failed", "cancelled", "timeout"].includes(summary.status);
}

/** Offer to re-run the open run when it has finished (its scenario and parameters are known). */
function renderRerun(summary) {
  $("rerun").hidden = !canRerun(summary);
  if (!$("rerun").hidden) $("rerun-text").textContent = `Run ${summary.id} (${summary.scenario}) ended: ${summary.status}.`;
}

async function rerun() {
  const summary = app.model?.summary;
  if (!summary) return;
  selectScenario(summary.scenario, summary.params);
  setUrl({ scenario: summary.scenario });
  await startRun();
}

/** Stop the open run if it repeats until stopped (the default run): another run replaces it. */
async function stopLoopingRun() {
  const s = app.model?.summary;
  if (s?.params?.loop && (s.status === "running" || s.status === "queued")) {
    try {
      await api.cancel(s.id);
    } catch {
      // Already finished or evicted: nothing to stop.
    }
  }
}

async function startRun() {
  const name = $("scenario-select").value;
  $("form-error").textContent = "";
  let params;
  try {
    params = app.readParams();
  } catch (error) {
    $("form-error").textContent = error.message;
    return;
  }
  $("run-button").disabled = true;
  try {
    await stopLoopingRun();
    const summary = await api.start(name, params);
    await openRun(summary.id);
    refreshRunList();
  } catch (error) {
    $("form-error").textContent =
      error.status === 429 ? `Too many runs at once: ${describeError(error)}` : describeError(error);
  } finally {
    $("run-button").disabled = app.mode === "attach";
  }
}

async function stopRun() {
  const id = app.model?.summary?.id;
  if (!id) return;
  try {
    app.model.summary = await api.cancel(id);
    scheduleRender();
  } catch (error) {
    $("form-error").textContent = describeError(error);
  }
}

async function replayTrace() {
  const file = $("trace-file").files?.[0];
  $("replay-error").textContent = "";
  if (!file) return;
  if (file.size > 16 * 1024 * 1024) {
    $("replay-error").textContent = `${file.name} is ${(file.size / 1048576).toFixed(1)} MiB; the server accepts traces up to 16 MiB.`;
    return;
  }
  try {
    const summary = await api.uploadTrace(await file.text());
    await openRun(summary.id);
    refreshRunList();
  } catch (error) {
    $("replay-error").textContent = `${file.name}: ${describeError(error)}`;
  }
}

function setUrl(changes) {
  const url = new URL(location.href);
  url.searchParams.delete("token"); // the server has set its cookie; keep the secret out of history
  for (const [key, value] of Object.entries(changes)) {
    if (value == null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  history.replaceState(null, "", url);
}

// ---------------------------------------------------------------- start-up
async function init() {
  for (const button of document.querySelectorAll("[role=tab]")) button.addEventListener("click", () => selectTab(button.dataset.tab));
  document.addEventListener("keydown", (event) => {
    if (event.target.closest?.("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
    const tab = ["timeline", "dag", "memory", "graph", "training", "kvstore"][Number(event.key) - 1];
    if (tab) selectTab(tab);
  });
  $("scenario-select").addEventListener("change", (event) => {
    selectScenario(event.target.value);
    setUrl({ scenario: event.target.value });
  });
  $("run-button").addEventListener("click", startRun);
  $("rerun-button").addEventListener("click", rerun);
  $("stop-button").addEventListener("click", stopRun);
  $("trace-file").addEventListener("change", () => ($("replay-button").disabled = !$("trace-file").files?.length));
  $("replay-button").addEventListener("click", replayTrace);
  $("scenario-form").addEventListener("submit", (event) => {
    event.preventDefault();
    startRun();
  });

  const query = new URLSearchParams(location.search);
  try {
    const health = await api.health();
    app.mode = health.mode;
    $("server-status").textContent = `${health.mode === "attach" ? "attached to your script" : "server"} · v${health.version}`;
    $("server-status").dataset.state = "ok";
  } catch (error) {
    $("server-status").textContent =
      error.status === 401 ? "not authorised: open the URL with ?token=… that the server printed" : `server unreachable: ${describeError(error)}`;
    $("server-status").dataset.state = "error";
    return;
  }
  let tutorials = [];
  try {
    [app.scenarios, tutorials] = await Promise.all([api.scenarios(), api.tutorials()]);
  } catch (error) {
    $("form-error").textContent = `Could not list scenarios: ${describeError(error)}`;
  }
  setCatalogue({ scenarios: app.scenarios, tutorials });
  for (const el of document.querySelectorAll(".tutorial-links[data-tutorials]")) {
    el.innerHTML = el.dataset.tutorials
      .split(",")
      .map((n) => tutorialHtml(n))
      .join(" ");
  }
  $("scenario-select").replaceChildren(...app.scenarios.map((s) => new Option(`${s.title} (${s.name})`, s.name)));
  selectScenario(query.get("scenario") ?? app.scenarios[0]?.name);
  if (app.mode === "attach") {
    // The server runs inside the user's script: it streams that process and starts no scenario,
    // so the scenario form does not apply and is not shown.
    $("scenario-card").hidden = true;
    $("run-button").disabled = true;
  }
  const runs = await refreshRunList();
  // Without ?run=, open the newest run still in progress (the run `mxlab` started at launch).
  const inProgress = runs?.find((r) => r.status === "running" || r.status === "queued");
  const runId = query.get("run") ?? (app.mode === "attach" ? "live" : inProgress?.id);
  if (runId) await openRun(runId);
  settle();
  scheduleRender();
  if (!runId) {
    setUrl({});
    $("run-bar").innerHTML =
      '<span class="muted">No run open. Pick a scenario and press <b>Start a new run</b>, or open a run from the list.</span>';
  }
  selectTab("timeline");
  document.body.dataset.ready = "true";
}

window.addEventListener("error", (event) => console.error("MXLab UI error:", event.message));
init();
