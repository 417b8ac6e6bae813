// The REST calls the page makes (same origin; the token, if any, travels in the server's cookie).

export class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === "string" ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
  }
}

async function request(method, path, { json, body, headers } = {}) {
  const init = { method, headers: { ...(headers || {}) }, credentials: "same-origin" };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(path, init);
  const type = response.headers.get("Content-Type") || "";
  const payload = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) throw new ApiError(response.status, payload?.detail ?? payload ?? response.statusText);
  return payload;
}

export const api = {
  health: () => request("GET", "/api/health"),
  scenarios: () => request("GET", "/api/scenarios"),
  tutorials: () => request("GET", "/api/tutorials"),
  runs: () => request("GET", "/api/runs"),
  run: (id) => request("GET", `/api/runs/${encodeURIComponent(id)}`),
  start: (scenario, params) => request("POST", "/api/runs", { json: { scenario, params } }),
  cancel: (id) => request("POST", `/api/runs/${encodeURIComponent(id)}/cancel`),
  graphDot: (id) => request("GET", `/api/runs/${encodeURIComponent(id)}/graph.dot`),
  uploadTrace: (text) => request("POST", "/api/traces", { body: text, headers: { "Content-Type": "application/json" } }),
  traceUrl: (id) => `/api/runs/${encodeURIComponent(id)}/trace`,
};

/** A readable one-line message for an ApiError detail (pydantic's error lists included). */
export function describeError(error) {
  const detail = error?.detail;
  if (Array.isArray(detail)) {
    return detail.map((d) => `${(d.loc || []).filter((p) => p !== "body").join(".") || "params"}: ${d.msg}`).join("; ");
  }
  return error?.message || String(error);
}

/** Open the event stream of run `id`; `handlers` get hello/frames/status messages and close. */
export function openEventStream(id, handlers) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/api/runs/${encodeURIComponent(id)}/events`);
  socket.addEventListener("message", (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      handlers.onProblem?.("the server sent a message that is not JSON");
      return;
    }
    if (data.type === "hello") handlers.onHello?.(data.run);
    else if (data.type === "frames") handlers.onFrames?.(data);
    else if (data.type === "status") handlers.onStatus?.(data.run);
  });
  socket.addEventListener("close", (event) => handlers.onClose?.(event));
  return socket;
}
