// The CairnQ dashboard page. Plain browser JavaScript, no dependencies.
// Every value from the database reaches the DOM through textContent or an
// attribute set with setAttribute, never as markup.

import { renderChart, renderLatency, renderThroughput } from "./charts.js";
import { $, api, el, inertBidi, jsonText, nodes, stored } from "./dom.js";

const STATUSES = ["queued", "running", "succeeded", "failed", "canceled"];
const TERMINAL = new Set(["succeeded", "failed", "canceled"]);
const readOnly = document.body.dataset.readOnly === "true";

const state = {
  filter: {},
  tasks: [],
  nextBeforeId: null,
  selectedId: null,
  selected: null,
  skewMs: 0,
  overview: null,
  live: false,
  // The bulk action whose confirmation is open ("retry:every failed task in queue x"), so a live refresh of the
  // list does not close it under the operator's pointer.
  bulkConfirm: null,
};

// ---- time ---------------------------------------------------------------

const now = () => Date.now() + state.skewMs;

function duration(ms) {
  const abs = Math.abs(Math.round(ms));
  if (abs < 1000) return `${abs} ms`;
  const units = [
    [86400000, "d"],
    [3600000, "h"],
    [60000, "min"],
    [1000, "s"],
  ];
  const i = units.findIndex(([u]) => abs >= u);
  const [u, label] = units[i];
  const n = Math.floor(abs / u);
  const next = units[i + 1];
  if (!next || n >= 10) return `${n} ${label}`;
  const m = Math.floor((abs - n * u) / next[0]);
  return m === 0 ? `${n} ${label}` : `${n} ${label} ${m} ${next[1]}`;
}

function relative(atMs) {
  const delta = atMs - now();
  if (Math.abs(delta) < 1000) return "just now";
  return delta > 0 ? `in ${duration(delta)}` : `${duration(delta)} ago`;
}

/** The largest instant a Date holds (ms). A wait without a timeout parks its task until exactly then: no deadline. */
const DATE_LIMIT_MS = 8_640_000_000_000_000;

/** A time that keeps itself fresh (see tickTimes); one no Date holds (a v1 peer may store it) is named, not thrown on. */
function when(atMs) {
  if (atMs === null || atMs === undefined) return el("span", { class: "dim" }, "—");
  if (atMs === DATE_LIMIT_MS) return el("span", { class: "dim" }, "never (no deadline)");
  if (!(Math.abs(atMs) < DATE_LIMIT_MS)) return el("span", { class: "dim", title: `${atMs} ms since the epoch` }, atMs > 0 ? "beyond the year 275760" : "before the year -271821");
  return el("time", { class: "when", datetime: new Date(atMs).toISOString(), title: new Date(atMs).toISOString(), "data-at": atMs }, relative(atMs));
}

function tickTimes() {
  for (const node of document.querySelectorAll("time[data-at]")) node.textContent = relative(Number(node.getAttribute("data-at")));
  $("clock").textContent = new Date(now()).toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

// ---- pieces ---------------------------------------------------------------

function pill(status, cancelRequested) {
  return el(
    "span",
    {},
    el("span", { class: `pill s-${status}`, "data-testid": "status" }, status),
    cancelRequested && status === "running" ? el("span", { class: "flag" }, "cancel requested") : null,
  );
}

function progressBar(progress, status, wide) {
  if (progress === null || progress === undefined) return el("span", { class: "dim" }, "—");
  const pct = Math.max(0, Math.min(100, Math.round(progress * 100)));
  const fill = el("span", {});
  fill.style.width = `${pct}%`;
  return el(
    "span",
    { class: wide ? "progress wide" : "progress" },
    el("span", { class: `bar s-${status}`, role: "progressbar", "aria-valuenow": pct, "aria-valuemin": 0, "aria-valuemax": 100 }, fill),
    el("span", { class: "bar-label" }, `${pct}%`),
  );
}

function shortId(id) {
  return id.length > 16 ? `${id.slice(0, 9)}…${id.slice(-5)}` : id;
}

function toast(message, bad) {
  const node = $("toast");
  node.textContent = message;
  node.className = bad ? "toast bad" : "toast";
  node.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (node.hidden = true), 4000);
}

// ---- overview -----------------------------------------------------------

function renderQueues(queues) {
  const names = Object.keys(queues).sort();
  const box = $("queues");
  $("queue-names").replaceChildren(...names.map((n) => el("option", { value: n })));
  if (names.length === 0) {
    box.replaceChildren(el("p", { class: "empty" }, "No tasks in this database yet."));
    return;
  }
  const head = el("tr", {}, el("th", {}, "Queue"), el("th", {}, ""), ...STATUSES.map((s) => el("th", { class: `num s-${s}` }, el("i", { class: "dot" }), s)), el("th", { class: "num" }, "total"));
  const rows = names.map((name) => {
    const counts = queues[name];
    const total = STATUSES.reduce((sum, s) => sum + counts[s], 0);
    const stack = el("div", { class: "stack", title: STATUSES.map((s) => `${s} ${counts[s]}`).join(", ") });
    for (const s of STATUSES) {
      if (counts[s] === 0) continue;
      const seg = el("span", { class: `s-${s}` });
      seg.style.width = `${(counts[s] / total) * 100}%`;
      stack.append(seg);
    }
    const cells = STATUSES.map((s) =>
      el(
        "td",
        { class: "num" },
        el(
          "button",
          {
            type: "button",
            class: `count s-${s}${counts[s] === 0 ? " zero" : ""}`,
            title: `show ${s} tasks of ${name}`,
            "data-testid": `count-${s}`,
            onclick: () => applyFilter({ status: s, queue: name }),
          },
          String(counts[s]),
        ),
      ),
    );
    return el("tr", { class: "queue", "data-queue": name }, el("td", { class: "queue-name", title: name }, stored(name)), el("td", { class: "stack-cell" }, stack), ...cells, el("td", { class: "num total" }, String(total)));
  });
  box.replaceChildren(el("table", { class: "queue-table" }, el("thead", {}, head), el("tbody", {}, rows)));
}

async function refreshOverview() {
  const overview = await api("api/overview");
  state.skewMs = overview.nowMs - Date.now();
  state.overview = overview;
  renderQueues(overview.queues);
  renderActivityQueues();
}


async function refreshChart() {
  renderChart(await api("api/throughput"));
}

// ---- activity charts -------------------------------------------------------

const activity = { range: "hour", queue: "" };

function renderActivityQueues() {
  const select = $("activity-queue");
  const queues = Object.keys(state.overview?.queues ?? {}).sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join("\n") === queues.join("\n")) return;
  select.replaceChildren(el("option", { value: "" }, "all queues"), ...queues.map((q) => el("option", { value: q }, q)));
  select.value = queues.includes(activity.queue) ? activity.queue : "";
}

async function refreshActivity() {
  renderActivityQueues();
  const query = new URLSearchParams({ range: activity.range });
  if (activity.queue !== "") query.set("queue", activity.queue);
  const data = await api(`api/activity?${query}`);
  renderThroughput(data);
  renderLatency(data);
}

$("activity-range").addEventListener("change", (event) => {
  activity.range = event.target.value;
  refreshActivity().catch(() => {});
});
$("activity-queue").addEventListener("change", (event) => {
  activity.queue = event.target.value;
  refreshActivity().catch(() => {});
});

// ---- task list ------------------------------------------------------------

function row(task) {
  return el(
    "tr",
    { "data-id": task.id, class: task.id === state.selectedId ? "selected" : null, onclick: () => select(task.id) },
    el("td", {}, pill(task.status, task.cancel_requested)),
    el("td", { class: "mono", title: task.id }, shortId(task.id)),
    el("td", { class: "cell-name", title: task.name }, stored(task.name)),
    el("td", { class: "cell-name", title: task.queue }, stored(task.queue)),
    el("td", { class: "num" }, `${task.attempt}/${task.max_attempts}`),
    el("td", {}, progressBar(task.progress, task.status)),
    el("td", {}, when(task.created_at_ms)),
    el("td", {}, when(task.updated_at_ms)),
  );
}

function renderTasks() {
  $("task-rows").replaceChildren(...state.tasks.map(row));
  $("no-tasks").hidden = state.tasks.length > 0;
  $("load-more").hidden = state.nextBeforeId === null;
  renderBulk();
}

/**
 * Reads of the list can overlap (a live tick, a filter change, "Load more"),
 * and their answers can arrive out of order. Each read takes a number; an
 * answer is shown only if no later read has been shown and the filter it was
 * asked for is still the one in force, so a slow answer for the previous
 * filter never replaces the rows of the new one.
 */
const listReads = { issued: 0, shown: 0 };

async function readList(body) {
  const filter = state.filter;
  const seq = ++listReads.issued;
  const page = await api("api/tasks", { filter, ...body });
  if (seq < listReads.shown || filter !== state.filter) return null;
  listReads.shown = seq;
  return page;
}

async function refreshTasks() {
  const limit = Math.min(200, Math.max(50, state.tasks.length));
  const page = await readList({ limit });
  if (page === null) return;
  state.tasks = page.tasks;
  state.nextBeforeId = page.nextBeforeId;
  renderTasks();
}

// ---- groups ---------------------------------------------------------------

/** How many groups the panel lists (most queued first). */
const GROUPS_SHOWN = 10;
/** False once the store answered that it does not record groups (501): the panel stays hidden. */
let groupsRecorded = true;

/**
 * With a task name in the filter, the counts by group of that name (queued,
 * running), most queued first; hidden when no name is set, when the name has
 * no grouped tasks, or when the store does not record groups.
 */
async function refreshGroups() {
  const name = state.filter.name;
  if (name === undefined || !groupsRecorded) {
    $("groups").hidden = true;
    return;
  }
  let answer;
  try {
    answer = await api("api/groups", { name, limit: GROUPS_SHOWN + 1 });
  } catch (err) {
    if (err.status === 501) {
      groupsRecorded = false;
      $("groups").hidden = true;
      return;
    }
    throw err;
  }
  if (state.filter.name !== name) return;
  const shown = answer.groups.slice(0, GROUPS_SHOWN);
  $("groups-name").textContent = name;
  $("groups-legend").textContent = answer.groups.length > GROUPS_SHOWN ? `the ${GROUPS_SHOWN} with most queued` : `${shown.length} ${shown.length === 1 ? "group" : "groups"}`;
  $("group-rows").replaceChildren(
    ...shown.map((g) => el("tr", { "data-group": g.group }, el("td", {}, stored(g.group)), el("td", { class: "num", "data-testid": "group-queued" }, g.queued), el("td", { class: "num", "data-testid": "group-running" }, g.running))),
  );
  $("groups").hidden = shown.length === 0;
}

async function loadMore() {
  if (state.nextBeforeId === null) return;
  const beforeId = state.nextBeforeId;
  const page = await readList({ beforeId, limit: 50 });
  // A refresh shown meanwhile replaced the rows this page would follow.
  if (page === null || state.nextBeforeId !== beforeId) return;
  state.tasks = state.tasks.concat(page.tasks);
  state.nextBeforeId = page.nextBeforeId;
  renderTasks();
}

function readFilterForm() {
  const form = new FormData($("filters"));
  const filter = {};
  for (const key of ["status", "queue", "name", "key", "correlationId"]) {
    const value = String(form.get(key) ?? "").trim();
    if (value !== "") filter[key] = value;
  }
  return filter;
}

function applyFilter(filter) {
  state.filter = filter;
  $("filter-status").value = filter.status ?? "";
  $("filter-queue").value = filter.queue ?? "";
  $("filter-name").value = filter.name ?? "";
  $("filter-key").value = filter.key ?? "";
  $("filter-correlation").value = filter.correlationId ?? "";
  // The rows of the previous filter go at once: the table only ever shows rows of the filter in force.
  state.tasks = [];
  state.nextBeforeId = null;
  $("task-table").dataset.loading = "true";
  renderTasks();
  $("no-tasks").hidden = true;
  refreshGroups().catch((err) => toast(err.message, true));
  refreshTasks()
    .catch((err) => toast(err.message, true))
    .finally(() => {
      if (state.filter === filter) delete $("task-table").dataset.loading;
    });
}

// ---- bulk -----------------------------------------------------------------

function bulkAction() {
  const s = state.filter.status;
  if (readOnly || state.filter.key !== undefined) return null;
  if (s === "failed" || s === "canceled") return "retry";
  if (s === "queued" || s === "running") return "cancel";
  return null;
}

function describeFilter() {
  const parts = [];
  if (state.filter.queue) parts.push(`in queue ${state.filter.queue}`);
  if (state.filter.name) parts.push(`named ${state.filter.name}`);
  if (state.filter.correlationId) parts.push(`with correlation id ${state.filter.correlationId}`);
  return parts.join(", ");
}

function bulkLabel(action) {
  const scope = describeFilter();
  return `${action === "retry" ? "Retry" : "Cancel"} every ${state.filter.status} task${scope ? ` ${scope}` : ""}`;
}

function renderBulk() {
  const action = bulkAction();
  $("bulk").hidden = action === null;
  if (action === null) {
    state.bulkConfirm = null;
    return;
  }
  const label = bulkLabel(action);
  // A confirmation stays open across live refreshes while the filter it was asked for is unchanged.
  if (state.bulkConfirm !== label) state.bulkConfirm = null;
  const confirming = state.bulkConfirm !== null;
  $("bulk-confirm").hidden = !confirming;
  $("bulk-action").hidden = confirming;
  $("bulk-text").textContent = action === "retry" ? "Requeue them all?" : "Stop them all?";
  $("bulk-action").textContent = label;
  $("bulk-action").className = action === "retry" ? "primary" : "danger";
  $("bulk-yes").className = action === "retry" ? "primary" : "danger";
  $("bulk-confirm-text").textContent = `${label}?`;
}

async function runBulk() {
  const action = bulkAction();
  if (action === null) return;
  state.bulkConfirm = null;
  renderBulk();
  const { key: _key, ...filter } = state.filter;
  const result = await api(`api/bulk/${action}`, { filter });
  toast(`${action === "retry" ? "Requeued" : "Canceled or asked to stop"} ${result.changed} task${result.changed === 1 ? "" : "s"}`);
  await refreshAll();
}

// ---- detail ---------------------------------------------------------------

/** Stored JSON, indented ({@link jsonText}: bidi controls written as JSON escapes). */
function jsonBlock(value, cls) {
  return el("pre", { class: `json${cls ? ` ${cls}` : ""}` }, jsonText(value, 2));
}

/** Whether a JSON value is an object (not null, not an array). */
function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The submitter's trace context CairnQ stores in the metadata (key `cairnq.trace`, docs/protocol.md), as the
 * trace id an operator pastes into their tracing tool, and the metadata without it (what the submitter wrote).
 */
function traceOf(metadata) {
  // A v1 peer may have stored any JSON value (null, an array, a string): shown as it is, with no trace.
  if (!isPlainObject(metadata)) return { trace: null, metadata };
  const carrier = metadata["cairnq.trace"];
  const match = typeof carrier?.traceparent === "string" ? /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(carrier.traceparent) : null;
  if (match === null) return { trace: null, metadata };
  const { ["cairnq.trace"]: _carrier, ...rest } = metadata;
  return { trace: { traceId: match[1], traceparent: carrier.traceparent }, metadata: rest };
}

function field(label, ...value) {
  return [el("dt", {}, label), el("dd", {}, ...value)];
}

function taskLink(id) {
  return el("button", { type: "button", class: "link", onclick: () => select(id) }, id);
}

/**
 * What a journal entry waiting on something waits for, from its fields (the server's explanation words it for the parked one).
 * A finished task waits for nothing: its `waiting` entry is where it was parked when it ended (a cancel leaves it).
 */
function stepDetail(step, taskStatus) {
  if (step.status === "waiting" && (taskStatus === "succeeded" || taskStatus === "failed" || taskStatus === "canceled")) {
    return el("span", { class: "dim" }, `parked here when the task ended ${taskStatus}: no longer waiting`);
  }
  if (step.status === "waiting") {
    if (step.kind === "wait") return el("span", {}, "waiting for message '", stored(step.waitingFor), "'", step.wakeAtMs !== null && step.wakeAtMs < 8.64e15 ? [" until ", when(step.wakeAtMs)] : null);
    if (step.kind === "join") return el("span", {}, `waiting for ${Array.isArray(step.waitingFor) ? step.waitingFor.length : 0} children`);
    return el("span", {}, "sleeping until ", when(step.wakeAtMs));
  }
  if (step.status === "failed") return stored((step.error && step.error.message) || "failed", { class: "s-failed" });
  if (step.kind === "spawn") return taskLink(String(step.result));
  if (step.kind === "sleep") return el("span", { class: "dim" }, "slept");
  const text = jsonText(step.result);
  return stored(text.length > 80 ? `${text.slice(0, 79)}…` : text, { class: "mono" });
}

function stepsTimeline(steps, taskStatus) {
  if (!Array.isArray(steps) || steps.length === 0) return null;
  return [
    el("h4", {}, `Steps (${steps.length})`),
    el(
      "ol",
      { class: "steps", "data-testid": "steps" },
      steps.map((s) =>
        el("li", { class: `step-${s.status}` }, stored(s.name, { class: "mono" }), el("span", { class: "dim" }, s.kind), el("span", { class: `pill s-${s.status === "done" ? "succeeded" : s.status === "failed" ? "failed" : "queued"}` }, s.status), stepDetail(s, taskStatus), el("span", { class: "dim" }, `attempt ${s.attempt}`), when(s.atMs)),
      ),
    ),
  ];
}

/** Says why a children list is partial: the server stops at `limits.children` children or `limits.treeRows` tasks of the tree. */
function childrenNote(cut, shown, limits) {
  if (cut === "children") return el("p", { class: "dim", "data-testid": "children-cut" }, `showing the newest ${shown} children; the task has more`);
  if (cut === "tree") return el("p", { class: "dim", "data-testid": "children-cut" }, `showing ${shown} children found among the newest ${limits.treeRows} tasks of its tree; older children are not shown`);
  return null;
}

function renderDetail(data) {
  const { task, explanation, parent, children, childrenCut, childrenLimits } = data;
  const { trace, metadata } = traceOf(task.metadata);
  const box = $("detail");
  const actions = [];
  if (!readOnly && (task.status === "failed" || task.status === "canceled")) {
    actions.push(el("button", { type: "button", class: "primary", "data-testid": "retry", onclick: () => act("retry", task.id) }, "Retry"));
  }
  if (!readOnly && (task.status === "queued" || task.status === "running")) {
    actions.push(
      el("button", { type: "button", class: "danger", "data-testid": "cancel", onclick: () => act("cancel", task.id) }, task.status === "running" ? "Request cancel" : "Cancel"),
    );
  }
  const progress =
    task.progress === null && task.message === null
      ? null
      : el(
          "div",
          { class: "progress-block" },
          progressBar(task.progress ?? 0, task.status, true),
          task.message === null ? null : el("div", { class: "progress-text", "data-testid": "progress-message" }, stored(task.message)),
        );
  box.replaceChildren(
    ...nodes(
    el(
      "div",
      { class: "detail-head" },
      pill(task.status, task.cancel_requested_at_ms !== null),
      el("h3", { "data-testid": "detail-id" }, task.id),
      el("button", { type: "button", class: "close", title: "close", "aria-label": "close", onclick: () => select(null) }, "×"),
    ),
    el("p", { class: `explain s-${task.status}`, "data-testid": "explain" }, el("b", {}, `Why ${explanation.state}`), inertBidi(explanation.summary)),
    actions.length > 0 ? el("div", { class: "actions" }, actions) : null,
    progress,
    el(
      "dl",
      { class: "fields" },
      field("name", stored(task.name)),
      field("queue", stored(task.queue)),
      field("attempt", `${task.attempt} of ${task.max_attempts}`),
      field("priority", String(task.priority)),
      field("worker", task.worker_id === null ? el("span", { class: "dim" }, "—") : stored(task.worker_id, { class: "mono" })),
      field("lease until", when(task.lease_until_ms)),
      field("run at", when(task.run_at_ms)),
      field("created", when(task.created_at_ms)),
      field("updated", when(task.updated_at_ms)),
      field("completed", when(task.completed_at_ms)),
      task.cancel_requested_at_ms === null ? [] : field("cancel asked", when(task.cancel_requested_at_ms)),
      field("parent", parent === null ? el("span", { class: "dim" }, "—") : taskLink(parent.id)),
      task.root_id !== null && task.root_id !== task.id ? field("root", taskLink(task.root_id)) : [],
      field("correlation", task.correlation_id === null ? el("span", { class: "dim" }, "—") : stored(task.correlation_id)),
      trace === null ? [] : field("trace", el("span", { class: "mono", "data-testid": "trace-id", title: `traceparent ${trace.traceparent}` }, trace.traceId)),
    ),
    children.length === 0 && childrenCut === null
      ? null
      : [el("h4", {}, childrenCut === null ? `Children (${children.length})` : `Children (showing ${children.length})`), childrenNote(childrenCut, children.length, childrenLimits), el("ul", { class: "children" }, children.map((c) => el("li", {}, pill(c.status, c.cancel_requested), taskLink(c.id), stored(c.name, { class: "dim" }))))],
    stepsTimeline(explanation.steps, task.status),
    el("h4", {}, "Payload"),
    el("div", { "data-testid": "payload" }, jsonBlock(task.payload)),
    task.result === null ? null : [el("h4", {}, "Result"), el("div", { "data-testid": "result" }, jsonBlock(task.result))],
    task.error === null ? null : [el("h4", {}, "Error"), el("div", { "data-testid": "error" }, jsonBlock(task.error, "error"))],
    isPlainObject(metadata) && Object.keys(metadata).length === 0 ? null : [el("h4", {}, "Metadata"), el("div", { "data-testid": "metadata" }, jsonBlock(metadata))],
    ),
  );
  box.hidden = false;
}

async function refreshDetail() {
  if (state.selectedId === null) return;
  const id = state.selectedId;
  try {
    const data = await api(`api/tasks/${encodeURIComponent(id)}`);
    if (state.selectedId !== id) return;
    state.skewMs = data.nowMs - Date.now();
    state.selected = data.task;
    renderDetail(data);
  } catch (err) {
    if (state.selectedId !== id) return;
    $("detail").replaceChildren(el("p", { class: "empty" }, err.message));
    $("detail").hidden = false;
  }
}

function select(id) {
  state.selectedId = id;
  state.selected = null;
  for (const tr of document.querySelectorAll("#task-rows tr")) tr.classList.toggle("selected", tr.getAttribute("data-id") === id);
  if (id === null) {
    $("detail").hidden = true;
    history.replaceState(null, "", location.pathname);
    return;
  }
  // Only the id goes into the URL, never task data.
  history.replaceState(null, "", `#${id}`);
  refreshDetail().catch((err) => toast(err.message, true));
}

async function act(action, id) {
  try {
    const result = await api(`api/tasks/${encodeURIComponent(id)}/${action}`, {});
    const t = result.task;
    toast(action === "retry" ? `Requeued ${t.id}` : t.status === "canceled" ? `Canceled ${t.id}` : `Asked ${t.id} to stop: it ends canceled when its handler notices`);
  } catch (err) {
    toast(err.message, true);
  }
  await refreshAll();
}

// ---- live updates ---------------------------------------------------------

async function refreshAll() {
  const jobs = [refreshOverview(), refreshTasks(), refreshDetail(), refreshGroups()];
  const results = await Promise.allSettled(jobs);
  const failed = results.find((r) => r.status === "rejected");
  if (failed) setLive("down", failed.reason.message);
}

function setLive(mode, text) {
  $("live").dataset.state = mode;
  $("live-text").textContent = text;
}

function connect() {
  const source = new EventSource("api/events");
  source.addEventListener("hello", (event) => {
    const hello = JSON.parse(event.data);
    state.live = true;
    setLive("live", hello.pushWakeups ? "live (push)" : "live (polling)");
    refreshAll();
  });
  source.addEventListener("tick", (event) => {
    const tick = JSON.parse(event.data);
    if (tick.changed) {
      refreshOverview().catch(() => {});
      refreshTasks().catch(() => {});
    }
    // An open task that is not finished moves (progress, lease) without changing any count.
    if (tick.changed || (state.selected !== null && !TERMINAL.has(state.selected.status))) refreshDetail().catch(() => {});
  });
  source.addEventListener("problem", (event) => setLive("down", JSON.parse(event.data).message));
  source.addEventListener("error", () => {
    state.live = false;
    setLive("down", "reconnecting…");
  });
}

// ---- start ----------------------------------------------------------------

$("filters").addEventListener("submit", (event) => {
  event.preventDefault();
  applyFilter(readFilterForm());
});
$("clear-filters").addEventListener("click", () => applyFilter({}));
$("load-more").addEventListener("click", () => loadMore().catch((err) => toast(err.message, true)));
$("bulk-action").addEventListener("click", () => {
  const action = bulkAction();
  state.bulkConfirm = action === null ? null : bulkLabel(action);
  renderBulk();
});
$("bulk-no").addEventListener("click", () => {
  state.bulkConfirm = null;
  renderBulk();
});
$("bulk-yes").addEventListener("click", () => runBulk().catch((err) => toast(err.message, true)));

const initial = location.hash.slice(1);
if (/^task_[0-9A-Z]{26}$/.test(initial)) state.selectedId = initial;

setInterval(tickTimes, 1000);
setInterval(() => refreshChart().catch(() => {}), 15000);
setInterval(() => refreshActivity().catch(() => {}), 15000);
tickTimes();
refreshAll().then(() => (state.selectedId === null ? null : select(state.selectedId)));
refreshChart().catch(() => {});
refreshActivity().catch(() => {});
connect();
