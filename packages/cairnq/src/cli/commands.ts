/**
 * What each `cairnq` command does, over a connected client. Each returns
 * the JSON document `--json` prints and the text people see otherwise.
 */
import type { CairnQ } from "@cairnq/client";
import type { ParkedEvidence } from "@cairnq/client";
import { describeStepWait, listPage, readParkedEvidence } from "@cairnq/client";
import type { StepRecord, Task, TaskStatus, TerminalStatus } from "@cairnq/protocol";
import { CANCELABLE_STATUSES, hasGroupReads, isTerminalStatus, PARK_FOREVER_AT_MS, PROTOCOL_VERSION, RETRYABLE_STATUSES, SCHEMA_VERSION, STATUSES } from "@cairnq/protocol";
import { DEFAULT_PURGE_LIMIT, isTaskId } from "@cairnq/protocol/adapter";
import { parkedOn } from "@cairnq/protocol/sdk";
import { describeError, formatDuration, formatRelative, formatWhen } from "@cairnq/runtime";
import type { CliIo } from "./output.js";
import { displayWidth, jsonText, padDisplay, paint, printable, STATUS_COLOR, table, truncate } from "./output.js";
import { OperationFailed, UsageError } from "./usage-error.js";

/** What a command hands back: the `--json` document and the human text. */
export interface CommandOutput {
  readonly json: unknown;
  readonly text: string;
}

/** The list filters the CLI takes (`--status`, `--queue`, `--name`, `--correlation-id`). */
export interface TaskFilter {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  correlationId?: string;
}

function status(s: TaskStatus, io: CliIo): string {
  return paint(s, STATUS_COLOR[s], io.color);
}

/** Checks an id argument before touching the database, with what a task id looks like. */
export function requireTaskId(id: string): string {
  if (!isTaskId(id)) {
    throw new UsageError(`${JSON.stringify(id)} is not a task id (they look like task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP); find ids with: cairnq list`);
  }
  return id;
}

function notFound(id: string): OperationFailed {
  return new OperationFailed(`no task ${id} in this database (it may have been purged); list tasks with: cairnq list`, "not_found");
}

async function existing(client: CairnQ, id: string): Promise<Task> {
  const task = await client.get(id);
  if (task === null) throw notFound(id);
  return task;
}

/** `cairnq stats`: counts per queue and status. */
export async function statsCommand(client: CairnQ, io: CliIo, queue: string | undefined): Promise<CommandOutput> {
  const stats = await client.stats(queue);
  const names = Object.keys(stats).sort();
  const totals = Object.fromEntries([...STATUSES, "total"].map((s) => [s, 0])) as Record<TaskStatus | "total", number>;
  const queues: Record<string, Record<TaskStatus | "total", number>> = {};
  for (const name of names) {
    const counts = stats[name] as Record<TaskStatus, number>;
    const total = STATUSES.reduce((sum, s) => sum + counts[s], 0);
    queues[name] = { ...counts, total };
    for (const s of STATUSES) totals[s] += counts[s];
    totals.total += total;
  }
  if (names.length === 0) return { json: { queues, totals }, text: "no tasks in this database yet" };
  const header = ["QUEUE", ...STATUSES.map((s) => s.toUpperCase()), "TOTAL"];
  const cell = (s: TaskStatus, n: number): string => (n === 0 ? paint("0", "dim", io.color) : paint(String(n), STATUS_COLOR[s], io.color));
  const rows = names.map((name) => {
    const c = queues[name] as Record<TaskStatus | "total", number>;
    return [printable(name), ...STATUSES.map((s) => cell(s, c[s])), String(c.total)];
  });
  if (names.length > 1) rows.push(["(all)", ...STATUSES.map((s) => cell(s, totals[s])), String(totals.total)]);
  return { json: { queues, totals }, text: table(header, rows, { right: [1, 2, 3, 4, 5, 6], color: io.color }) };
}

/** The widest a group name is shown in `stats --by-group`'s table. */
const GROUP_WIDTH = 48;

/** `cairnq stats --by-group <name>`: queued and running tasks of one task name per group, most queued first. */
export async function groupStatsCommand(client: CairnQ, io: CliIo, name: string, limit: number): Promise<CommandOutput> {
  const store = client.store;
  if (!hasGroupReads(store)) {
    throw new OperationFailed("this store does not record groups (capabilities.groups is not true), so it cannot count tasks by group", "unsupported");
  }
  // One more than shown, to say whether the table was cut rather than let a full page pass for all of them.
  const read = await store.groupStats(name, { limit: limit + 1 });
  const groups = read.slice(0, limit);
  const cut = read.length > limit;
  if (groups.length === 0) return { json: { name, groups, more: false }, text: `no queued or running task of '${printable(name)}' has a group` };
  const cell = (s: "queued" | "running", n: number): string => (n === 0 ? paint("0", "dim", io.color) : paint(String(n), STATUS_COLOR[s], io.color));
  // A group name is shown escaped and cut (`--json` has it whole), so one long name does not widen the table.
  const rows = groups.map((g) => [truncate(printable(g.group), GROUP_WIDTH), cell("queued", g.queued), cell("running", g.running)]);
  const text = table(["GROUP", "QUEUED", "RUNNING"], rows, { right: [1, 2], color: io.color });
  const more = cut ? `\n${paint(`more: only the ${limit === 1 ? "group" : `${limit} groups`} with the most queued tasks shown; --limit shows more (up to 1000)`, "dim", io.color)}` : "";
  return { json: { name, groups, more: cut }, text: text + more };
}

/** `cairnq list`: newest first, keyset-paged by `--before`. */
export async function listCommand(client: CairnQ, io: CliIo, filter: TaskFilter, limit: number, before: string | undefined): Promise<CommandOutput> {
  const { tasks, nextBeforeId } = await listPage(client, { ...filter, limit, ...(before === undefined ? {} : { beforeId: requireTaskId(before) }) });
  const json = { tasks, nextBeforeId };
  if (tasks.length === 0) return { json, text: before === undefined ? "no tasks match" : "no more tasks" };
  const now = io.now();
  const rows = tasks.map((t) => [
    t.id,
    truncate(printable(t.name), 24),
    truncate(printable(t.queue), 16),
    status(t.status, io),
    `${t.attempt}/${t.max_attempts}`,
    t.progress === null ? "" : `${Math.round(t.progress * 100)}%`,
    formatRelative(t.created_at_ms, now),
  ]);
  const text = table(["ID", "NAME", "QUEUE", "STATUS", "ATTEMPT", "PROGRESS", "CREATED"], rows, { right: [4, 5], color: io.color });
  const more = nextBeforeId === null ? "" : `\n${paint(`more: add --before ${nextBeforeId}`, "dim", io.color)}`;
  return { json, text: text + more };
}

/** Stored JSON, indented ({@link jsonText}: what `JSON.stringify` leaves raw and a terminal acts on, as JSON escapes). */
function jsonBlock(value: unknown): string {
  return jsonText(value, 2)
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

/**
 * The durable-steps journal as a timeline: one line per entry, what a waiting one waits for. A finished
 * task waits for nothing: its `waiting` entry is where it was parked when it ended (a cancel leaves it).
 */
function stepLines(steps: readonly StepRecord[], now: number, task: Task, evidence: ParkedEvidence, parked: StepRecord | null): string {
  const names = steps.map((s) => printable(s.name));
  const width = Math.max(...names.map(displayWidth));
  return steps
    .map((s, i) => {
      const detail =
        s.status === "waiting"
          ? isTerminalStatus(task.status)
            ? `parked here when the task ended ${task.status}: no longer waiting`
            : `waiting for ${printable(describeStepWait(s, now, s === parked ? evidence : {}))}`
          : s.status === "failed"
            ? `failed: ${printable(describeError(s.error) ?? JSON.stringify(s.error))}`
            : s.kind === "spawn"
              ? `child ${String(s.result)}`
              : s.kind === "sleep"
                ? "slept"
                : `→ ${truncate(jsonText(s.result), 60)}`;
      return `  ${padDisplay(names[i] as string, width)}  ${s.kind.padEnd(5)}  ${s.status.padEnd(7)}  attempt ${s.attempt}  ${formatWhen(s.atMs, now)}  ${detail}`;
    })
    .join("\n");
}

/** `cairnq get <id>`: the whole row, and its durable-steps journal. */
export async function getCommand(client: CairnQ, io: CliIo, id: string): Promise<CommandOutput> {
  const task = await existing(client, requireTaskId(id));
  const now = io.now();
  const when = (ms: number | null): string => (ms === null ? "—" : formatWhen(ms, now));
  const fields: [string, string][] = [
    ["id", task.id],
    ["name", printable(task.name)],
    ["queue", printable(task.queue)],
    ["status", status(task.status, io) + (task.cancel_requested_at_ms !== null && task.status === "running" ? " (cancel requested)" : "")],
    ["attempt", `${task.attempt} of ${task.max_attempts}`],
    ["priority", String(task.priority)],
    ["progress", task.progress === null ? "—" : `${Math.round(task.progress * 100)}%${task.message === null ? "" : ` ${jsonText(task.message)}`}`],
    ["worker", task.worker_id === null ? "—" : printable(task.worker_id)],
    ["lease until", when(task.lease_until_ms)],
    // A wait without a timeout parks until PARK_FOREVER_AT_MS, which means "no deadline", not a date in the year 275760.
    ["run at", task.run_at_ms === PARK_FOREVER_AT_MS ? "never (no deadline)" : when(task.run_at_ms)],
    ["created", when(task.created_at_ms)],
    ["updated", when(task.updated_at_ms)],
    ["completed", when(task.completed_at_ms)],
    ["parent", task.parent_id ?? "—"],
    ["root", task.root_id ?? "—"],
    ["correlation", task.correlation_id === null ? "—" : printable(task.correlation_id)],
  ];
  const pad = Math.max(...fields.map(([k]) => k.length));
  const lines = fields.map(([k, v]) => `${paint(k.padEnd(pad), "bold", io.color)}  ${v}`);
  lines.push(`${paint("payload", "bold", io.color)}\n${jsonBlock(task.payload)}`);
  if (!isEmptyObject(task.metadata)) lines.push(`${paint("metadata", "bold", io.color)}\n${jsonBlock(task.metadata)}`);
  if (task.result !== null) lines.push(`${paint("result", "bold", io.color)}\n${jsonBlock(task.result)}`);
  if (task.error !== null) lines.push(`${paint("error", "bold", io.color)}  ${printable(describeError(task.error) ?? "", "lines")}\n${jsonBlock(task.error)}`);
  const steps = client.store.capabilities.durableSteps === true ? await client.steps(task.id) : null;
  // What the parked entry waits for may already be there (its message sent, its children finished): read as explain does.
  const parked = steps === null || task.status !== "queued" ? null : parkedOn(steps);
  const evidence = parked === null ? {} : await readParkedEvidence(client.store, task.id, parked);
  if (steps !== null && steps.length > 0) lines.push(`${paint("steps", "bold", io.color)}\n${stepLines(steps, now, task, evidence, parked)}`);
  return { json: steps === null ? { task } : { task, steps }, text: lines.join("\n") };
}

/**
 * Whether stored metadata is `{}` (not shown). The v1 column holds any JSON a peer wrote, so JSON `null`,
 * an array, a string or a number is shown as it is, never taken for an object.
 */
function isEmptyObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

/** `cairnq explain <id>`: one paragraph on why the task is where it is. */
export async function explainCommand(client: CairnQ, io: CliIo, id: string): Promise<CommandOutput> {
  const explained = await client.explain(requireTaskId(id), { nowMs: io.now() });
  if (explained === null) throw notFound(id);
  const { task, activity, ...explanation } = explained;
  const head = `${task.id} ${status(task.status, io)} (${explanation.state})`;
  return {
    json: { task: { id: task.id, name: task.name, queue: task.queue, status: task.status }, explanation, activity },
    text: `${paint(head, "bold", io.color)}\n${printable(explanation.summary, "paragraph")}`,
  };
}

/** `cairnq cancel <id>`. */
export async function cancelCommand(client: CairnQ, io: CliIo, id: string): Promise<CommandOutput> {
  const task = await client.cancel(requireTaskId(id));
  if (task === null) {
    const current = await existing(client, id);
    throw new OperationFailed(`task ${id} is already ${current.status}; only ${CANCELABLE_STATUSES.join(" or ")} tasks can be canceled`, "not_cancelable");
  }
  if (task.status === "canceled") return { json: { command: "cancel", changed: 1, task }, text: paint(`canceled 1 task: ${task.id} (it was queued)`, "green", io.color) };
  // How a running task ends depends on its lease: a live handler sees the cancel at its next heartbeat, while
  // an expired lease (its worker died) leaves it to the next claim's lease recovery. `explain` says which, in
  // the one wording the dashboard and `cairnq explain` use.
  // The cancel is written: a failed explain must not turn it into a reported failure (the plain line stands alone).
  const explained = await client.explain(task.id, { nowMs: io.now() }).catch(() => null);
  const text = paint(`requested cancel of 1 running task: ${task.id}`, "green", io.color);
  return { json: { command: "cancel", changed: 1, task }, text: explained === null ? text : `${text}\n${printable(explained.summary, "paragraph")}` };
}

/** `cairnq retry <id>`. */
export async function retryOneCommand(client: CairnQ, io: CliIo, id: string, resetAttempt: boolean): Promise<CommandOutput> {
  const task = await client.retry(requireTaskId(id), { resetAttempt });
  if (task === null) {
    const current = await existing(client, id);
    throw new OperationFailed(`task ${id} is ${current.status}; only ${RETRYABLE_STATUSES.join(" or ")} tasks can be retried`, "not_retryable");
  }
  const text = `requeued 1 task: ${task.id} (attempt ${task.attempt} of ${task.max_attempts} so far${resetAttempt ? ", reset" : ""})`;
  return { json: { command: "retry", changed: 1, task }, text: paint(text, "green", io.color) };
}

/** `cairnq retry --status failed|canceled [--queue] [--name]`: bulk. */
export async function retryManyCommand(
  client: CairnQ,
  io: CliIo,
  filter: TaskFilter & { status: Exclude<TerminalStatus, "succeeded"> },
  resetAttempt: boolean,
): Promise<CommandOutput> {
  const changed = await client.retryMany(resetAttempt ? { ...filter, resetAttempt } : filter);
  const scope = [filter.queue === undefined ? null : `queue ${filter.queue}`, filter.name === undefined ? null : `name ${filter.name}`].filter((p) => p !== null);
  const text = `requeued ${changed} ${filter.status} task${changed === 1 ? "" : "s"}${scope.length === 0 ? "" : ` (${scope.join(", ")})`}`;
  return { json: { command: "retry", changed, filter }, text: paint(text, changed > 0 ? "green" : "dim", io.color) };
}

/** `cairnq purge --older-than <duration>`: deletes in batches until none is left. */
export async function purgeCommand(
  client: CairnQ,
  io: CliIo,
  options: { olderThanMs: number; status?: TerminalStatus; queue?: string; name?: string },
): Promise<CommandOutput> {
  const limit = DEFAULT_PURGE_LIMIT;
  let changed = 0;
  for (;;) {
    const ids = await client.purge({ ...options, limit });
    changed += ids.length;
    if (ids.length < limit) break;
  }
  const what = options.status ?? "terminal";
  const text = `deleted ${changed} ${what} task${changed === 1 ? "" : "s"} completed more than ${formatDuration(options.olderThanMs, "exact")} ago`;
  return { json: { command: "purge", changed, olderThanMs: options.olderThanMs }, text: paint(text, changed > 0 ? "green" : "dim", io.color) };
}

/** `cairnq migrate`: connect, which applies the protocol's migrations. */
export async function migrateCommand(client: CairnQ, io: CliIo, description: string): Promise<CommandOutput> {
  await client.connect();
  return {
    json: { command: "migrate", database: description, protocolVersion: PROTOCOL_VERSION, schemaVersion: SCHEMA_VERSION },
    text: paint(`${description} is at CairnQ protocol v${PROTOCOL_VERSION}, schema version ${SCHEMA_VERSION} (migrations applied)`, "green", io.color),
  };
}
