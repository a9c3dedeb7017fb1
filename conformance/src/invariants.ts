/**
 * The row invariants of protocol v1 §4 (and the row shape of §2.5, §3.1),
 * checked on a single row as read from a store.
 *
 * The kit calls {@link assertInvariants} on every row a store returns, so a
 * transition that leaves a row inconsistent fails the case that caused it,
 * whatever that case was asserting. Invariants that span two reads ("`error`
 * is cleared only by `retry`") are checked by the cases themselves.
 */
import type { Task, TaskRef } from "@cairnq/protocol";
import { STATUSES, TERMINAL_STATUSES } from "@cairnq/protocol";
import { FLAGGABLE_STATUSES, TASK_COLUMNS, TASK_ID_PATTERN } from "@cairnq/protocol/adapter";

/**
 * Slack for comparing two instants written by one statement or one insert.
 *
 * Postgres reads `clock_timestamp()` separately for `created_at_ms`,
 * `updated_at_ms` and `run_at_ms` of an insert, and once per claim draw
 * expression, so those may differ by a millisecond (§2.1); SQLite and the
 * in-memory store read one clock value per statement (difference 0).
 */
export const CLOCK_SLACK_MS = 5;

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);
const FLAGGABLE: ReadonlySet<string> = new Set(FLAGGABLE_STATUSES);

/**
 * A row broke a protocol invariant. `invariant` names the rule (stable, for
 * tests); the message quotes the rule, the offending values and the row.
 */
export class InvariantViolation extends Error {
  /** The rule that was broken, e.g. `"lease-iff-running"`. */
  readonly invariant: string;
  /** The row as read. */
  readonly row: unknown;

  constructor(invariant: string, detail: string, row: unknown, where: string) {
    super(`${where} breaks the protocol invariant '${invariant}': ${detail}\nrow: ${show(row)}`);
    this.name = "InvariantViolation";
    this.invariant = invariant;
    this.row = row;
  }
}

function show(row: unknown): string {
  try {
    return JSON.stringify(row);
  } catch {
    return String(row);
  }
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

/**
 * Asserts that `task` is a complete task row (§2.5: every §3.1 column, JSON
 * decoded, `*_ms` numeric) that satisfies every single-row invariant of §4:
 *
 * - `lease_until_ms IS NOT NULL` ⇔ `status = 'running'`;
 * - `completed_at_ms IS NOT NULL` ⇔ terminal;
 * - `worker_id` is NULL while queued and set while running;
 * - a running task has `attempt ≥ 1`;
 * - the cancel flag only exists on running rows and on rows that left running
 *   with it (`canceled`, or `succeeded` by raw `succeed`, which ignores it);
 * - `result` is non-NULL only on a succeeded row, and a succeeded row has
 *   `progress = 1.0`;
 * - `updated_at_ms` and `completed_at_ms` are not before `created_at_ms`,
 *   except on a canceled row: cancel reads the transaction-start clock
 *   (`now()` on Postgres, §2.1), and a keyed submit with `conflict:
 *   'replace'` may begin its transaction, wait on the key lock while another
 *   submit inserts the task it then cancels, and so stamp that task with a
 *   time before its creation (by as long as it waited).
 *
 * @param where - Names the read in the message, e.g. `"complete() result"`.
 * @throws InvariantViolation naming the broken rule.
 * @example
 * ```ts
 * const task = await store.get(id);
 * if (task) assertInvariants(task, "get()");
 * ```
 */
export function assertInvariants(task: unknown, where = "a task row"): asserts task is Task {
  const fail = (invariant: string, detail: string): never => {
    throw new InvariantViolation(invariant, detail, task, where);
  };
  if (typeof task !== "object" || task === null || Array.isArray(task)) fail("row-is-object", `expected a task row object, got ${show(task)}`);
  const row = task as Record<string, unknown>;
  for (const column of TASK_COLUMNS) {
    if (!(column in row) || row[column] === undefined) fail("every-column", `column '${column}' is missing (§2.5: every column of §3.1)`);
  }
  if (typeof row.id !== "string" || !TASK_ID_PATTERN.test(row.id)) fail("task-id-pattern", `id ${show(row.id)} does not match ${String(TASK_ID_PATTERN)} (§2.4)`);
  if (typeof row.name !== "string" || row.name === "") fail("name", `name must be a non-empty string, got ${show(row.name)}`);
  if (typeof row.queue !== "string" || row.queue === "") fail("queue", `queue must be a non-empty string, got ${show(row.queue)}`);
  const status = row.status;
  if (typeof status !== "string" || !(STATUSES as readonly string[]).includes(status)) {
    fail("status-in-list", `status ${show(status)} is not one of ${STATUSES.join(", ")} (§4)`);
  }
  for (const column of ["attempt", "max_attempts", "priority"] as const) {
    if (!isInteger(row[column])) fail("integers", `${column} must be an integer, got ${show(row[column])}`);
  }
  if ((row.attempt as number) < 0) fail("attempt-non-negative", `attempt ${show(row.attempt)} is negative`);
  if ((row.max_attempts as number) < 1) fail("max-attempts-positive", `max_attempts ${show(row.max_attempts)} is below 1`);
  for (const column of ["run_at_ms", "created_at_ms", "updated_at_ms"] as const) {
    if (!isInteger(row[column])) fail("ms-numeric", `${column} must be integer epoch ms, got ${show(row[column])} (§2.2: normalize every *_ms to a number)`);
  }
  for (const column of ["lease_until_ms", "cancel_requested_at_ms", "completed_at_ms"] as const) {
    if (row[column] !== null && !isInteger(row[column])) fail("ms-numeric", `${column} must be integer epoch ms or null, got ${show(row[column])}`);
  }
  for (const column of ["worker_id", "parent_id", "root_id", "correlation_id", "message"] as const) {
    if (row[column] !== null && typeof row[column] !== "string") fail("text-or-null", `${column} must be a string or null, got ${show(row[column])}`);
  }
  if (row.progress !== null && typeof row.progress !== "number") fail("progress-number", `progress must be a number or null, got ${show(row.progress)}`);
  if (typeof row.metadata !== "object" || row.metadata === null || Array.isArray(row.metadata)) {
    fail("metadata-object", `metadata must be a decoded JSON object, got ${show(row.metadata)} (§2.2: decode JSON columns)`);
  }
  if (typeof row.payload === "string" && /^[[{]/.test(row.payload)) {
    fail("payload-decoded", `payload looks like undecoded JSON text ${show(row.payload)} (§2.2: parse JSON columns on read)`);
  }

  const running = status === "running";
  const terminal = TERMINAL.has(status as string);
  if ((row.lease_until_ms !== null) !== running) {
    fail("lease-iff-running", `lease_until_ms is ${show(row.lease_until_ms)} while status is '${String(status)}' (§4: lease_until_ms IS NOT NULL ⇔ status = 'running')`);
  }
  if ((row.completed_at_ms !== null) !== terminal) {
    fail("completed-iff-terminal", `completed_at_ms is ${show(row.completed_at_ms)} while status is '${String(status)}' (§4: completed_at_ms IS NOT NULL ⇔ terminal)`);
  }
  if (status === "queued" && row.worker_id !== null) fail("worker-null-while-queued", `worker_id is ${show(row.worker_id)} on a queued row (§4)`);
  if (running && row.worker_id === null) fail("worker-set-while-running", "worker_id is null on a running row (§4: the owner while running)");
  if (running && (row.attempt as number) < 1) fail("running-attempt", `a running row has attempt ${show(row.attempt)}; every claim increments it (§5.10)`);
  if (row.cancel_requested_at_ms !== null && !FLAGGABLE.has(status as string)) {
    fail("flag-only-from-running", `cancel_requested_at_ms is set on a '${String(status)}' row; a flagged task ends canceled (or succeeded by raw succeed) and retry clears the flag (§4)`);
  }
  if (row.result !== null && status !== "succeeded") fail("result-only-on-success", `result ${show(row.result)} is set on a '${String(status)}' row (§4: written only on the success branch)`);
  if (status === "succeeded" && row.progress !== 1) fail("success-progress-one", `a succeeded row has progress ${show(row.progress)} (§4: success sets progress = 1.0)`);
  const created = row.created_at_ms as number;
  // A canceled row's times may precede its creation (§2.1: cancel reads the transaction start; see above).
  if (status === "canceled") return;
  if ((row.updated_at_ms as number) < created - CLOCK_SLACK_MS) fail("updated-after-created", `updated_at_ms ${show(row.updated_at_ms)} is before created_at_ms ${created}`);
  if (row.completed_at_ms !== null && (row.completed_at_ms as number) < created - CLOCK_SLACK_MS) {
    fail("completed-after-created", `completed_at_ms ${show(row.completed_at_ms)} is before created_at_ms ${created}`);
  }
}

/**
 * Asserts that `ref` is exactly a status probe answer `{ id, status }` (§2.5, §5.3).
 *
 * @throws InvariantViolation when keys are missing or extra, or a value is malformed.
 */
export function assertTaskRef(ref: unknown, where = "a status probe"): asserts ref is TaskRef {
  const fail = (invariant: string, detail: string): never => {
    throw new InvariantViolation(invariant, detail, ref, where);
  };
  if (typeof ref !== "object" || ref === null) fail("ref-is-object", `expected { id, status }, got ${show(ref)}`);
  const keys = Object.keys(ref as object).sort();
  if (keys.length !== 2 || keys[0] !== "id" || keys[1] !== "status") fail("ref-shape", `expected exactly the keys id and status, got ${keys.join(", ")} (§2.5)`);
  const { id, status } = ref as Record<string, unknown>;
  if (typeof id !== "string" || !TASK_ID_PATTERN.test(id)) fail("task-id-pattern", `id ${show(id)} does not match ${String(TASK_ID_PATTERN)}`);
  if (typeof status !== "string" || !(STATUSES as readonly string[]).includes(status)) fail("status-in-list", `status ${show(status)} is not one of ${STATUSES.join(", ")}`);
}
