/**
 * The filter a page sends with the task list and the bulk actions, checked
 * field by field: it arrives as JSON from the browser, so anything else is a
 * 400, never a query.
 */
import type { Task, TaskStatus } from "@cairnq/protocol";
import { isTaskStatus, STATUSES } from "@cairnq/protocol";
import { HttpError } from "./http.js";

const FIELDS = ["status", "queue", "name", "key", "correlationId"];
const MAX_FIELD_LENGTH = 1000;

/** A checked filter: only the fields the page set. */
export interface TaskFilter {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  key?: string;
  correlationId?: string;
}

function text(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string" || value.length > MAX_FIELD_LENGTH) throw new HttpError(400, `filter.${field} must be a string of at most ${MAX_FIELD_LENGTH} characters`);
  return value;
}

/** Checks a request's `filter` (absent = no filter); throws a 400 {@link HttpError} naming what is wrong. */
export function parseFilter(raw: unknown): TaskFilter {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) throw new HttpError(400, "filter must be an object");
  const f = raw as Record<string, unknown>;
  for (const key of Object.keys(f)) {
    if (!FIELDS.includes(key)) {
      throw new HttpError(400, `unknown filter ${JSON.stringify(key)}; filters are ${FIELDS.join(", ")}`);
    }
  }
  const out: TaskFilter = {};
  const status = text(f.status, "status");
  if (status !== undefined) {
    if (!isTaskStatus(status)) throw new HttpError(400, `filter.status must be one of ${STATUSES.join(", ")}`);
    out.status = status;
  }
  const queue = text(f.queue, "queue");
  if (queue !== undefined) out.queue = queue;
  const name = text(f.name, "name");
  if (name !== undefined) out.name = name;
  const key = text(f.key, "key");
  if (key !== undefined) out.key = key;
  const correlationId = text(f.correlationId, "correlationId");
  if (correlationId !== undefined) out.correlationId = correlationId;
  return out;
}

/** Whether `task` passes every field of `f` but the key (a key filter selects the task itself). */
export function matchesFilter(task: Task, f: TaskFilter): boolean {
  return (
    (f.status === undefined || task.status === f.status) &&
    (f.queue === undefined || task.queue === f.queue) &&
    (f.name === undefined || task.name === f.name) &&
    (f.correlationId === undefined || task.correlation_id === f.correlationId)
  );
}
