/**
 * The done-row extension of the §9 push signals: a CairnQ store that ends a
 * task in a statement of its own (a worker's succeed, complete or fail, a
 * client's cancel; not settlements combined into one multi-row statement,
 * where the rows' JSON would cost the settling backend ~20 µs a task for
 * reads only waiters save) also NOTIFYs, in the same statement, the task's terminal row on
 * {@link DONE_ROW_CHANNEL}, so a client waiting for that task has the row
 * in hand when the signal arrives and skips the read that a plain
 * `cairnq_done` (payload: the id) costs — one round trip of every `call()`.
 *
 * Compatible both ways with v1 (§3.8, untouched):
 * - the trigger still sends `cairnq_done` with the id for every terminal
 *   entry; a v1 peer never LISTENs on the extension channel and sees
 *   nothing new;
 * - a row notification is queued while the statement runs, before the
 *   trigger's (AFTER triggers of the CTE's `UPDATE` fire at the end of the
 *   statement), and a transaction's notifications arrive in the order they
 *   were sent: a waiter hears the row first, and the plain one after it
 *   finds nobody to wake;
 * - a task ended by a v1 peer, by lease recovery, in a multi-row statement, or whose row JSON is over
 *   {@link DONE_ROW_MAX_BYTES} (Postgres rejects a payload of 8000 bytes or
 *   more) gets only the plain notification, and its waiter reads the row as
 *   before.
 */
import type { Task } from "@cairnq/protocol";
import { isTerminalStatus, TERMINAL_STATUSES } from "@cairnq/protocol";
import type { TaskColumn } from "@cairnq/protocol/adapter";
import { decodeTask } from "@cairnq/store-kysely";

/** The channel a CairnQ store NOTIFYs a task's terminal row on, as a JSON object (see the module comment). */
export const DONE_ROW_CHANNEL = "cairnq_ext_done_row";

/** The largest row payload sent, in bytes: Postgres rejects a NOTIFY payload of 8000 bytes or more. */
export const DONE_ROW_MAX_BYTES = 7999;

/** The statement's name for the changed rows (a CTE); no task column has it. */
const SETTLED = "cairnq_settled";

/**
 * The statement that runs `update` and returns `returning` of each changed row, NOTIFYing each row
 * that ended terminal as `row_to_json` of its `taskColumns` on {@link DONE_ROW_CHANNEL} when it fits.
 * The extra column `done_row` (void) is for nobody.
 *
 * @example
 * terminalRowSignalSql("UPDATE cairnq_tasks SET … WHERE …", ["id", "status"], "id, name, …, payload::text AS payload, …");
 * // WITH cairnq_settled AS (UPDATE … RETURNING id, name, …) SELECT cairnq_settled.id, cairnq_settled.status, (SELECT pg_notify(…) …) AS done_row FROM cairnq_settled
 */
export function terminalRowSignalSql(update: string, returning: "task" | readonly TaskColumn[], taskColumns: string): string {
  const columns = returning === "task" ? `${SETTLED}.*` : returning.map((column) => `${SETTLED}.${column}`).join(", ");
  const terminal = TERMINAL_STATUSES.map((status) => `'${status}'`).join(", ");
  const notify =
    `(SELECT pg_notify('${DONE_ROW_CHANNEL}', j) FROM (SELECT row_to_json(${SETTLED})::text AS j) r ` +
    `WHERE ${SETTLED}.status IN (${terminal}) AND octet_length(j) <= ${DONE_ROW_MAX_BYTES})`;
  return `WITH ${SETTLED} AS (${update} RETURNING ${taskColumns}) SELECT ${columns}, ${notify} AS done_row FROM ${SETTLED}`;
}

/** `"id":"` opening a row payload: `row_to_json` writes the §3.1 columns in order, `id` first. */
const ID_PREFIX = '{"id":"';

/**
 * The task id a {@link DONE_ROW_CHANNEL} payload opens with, read without parsing the row (every
 * waiting process hears every task's row), or `null` when it does not open with a plain one (an id
 * JSON escapes is then never matched, and its waiter wakes on the plain `cairnq_done`).
 */
export function doneRowId(payload: string): string | null {
  if (!payload.startsWith(ID_PREFIX)) return null;
  const end = payload.indexOf('"', ID_PREFIX.length);
  if (end < 0) return null;
  const id = payload.slice(ID_PREFIX.length, end);
  return id.includes("\\") ? null : id;
}

/**
 * The terminal task a {@link DONE_ROW_CHANNEL} payload carries, or `null` for anything else (not
 * JSON, not a task row, not terminal): such a notification is ignored, and the plain `cairnq_done`
 * one still wakes the waiter.
 */
export function decodeDoneRow(payload: string): Task | null {
  let row: unknown;
  try {
    row = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof row !== "object" || row === null || typeof (row as { id?: unknown }).id !== "string") return null;
  const status = (row as { status?: unknown }).status;
  if (typeof status !== "string" || !isTerminalStatus(status)) return null;
  try {
    return decodeTask(row as Record<string, unknown>);
  } catch {
    return null;
  }
}
