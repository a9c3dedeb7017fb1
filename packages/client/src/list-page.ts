/**
 * One page of `list` with the cursor to the next, for the operator views that
 * page through tasks (the CLI's `list`, the dashboard's task table).
 */
import type { ListInput, Task } from "@cairnq/protocol";
import type { CairnQ } from "./cairnq.js";

/** A page of tasks, and the `beforeId` of the next page: `null` when no task follows this page. */
export interface TaskPage {
  readonly tasks: Task[];
  readonly nextBeforeId: string | null;
}

/**
 * Lists up to `input.limit` tasks (newest id first) and says whether more follow: it reads one task more
 * than it returns, so a last page that is exactly full has `nextBeforeId: null` rather than a cursor to a
 * page that holds nothing.
 *
 * @example
 * ```ts
 * const { tasks, nextBeforeId } = await listPage(cairnq, { queue: "emails", limit: 50 });
 * ```
 */
export async function listPage(client: Pick<CairnQ, "list">, input: Omit<ListInput, "order" | "limit"> & { readonly limit: number }): Promise<TaskPage> {
  const read = (await client.list({ ...input, order: "id", limit: input.limit + 1 })) as Task[];
  const tasks = read.slice(0, input.limit);
  return { tasks, nextBeforeId: read.length > input.limit ? (tasks[tasks.length - 1]?.id ?? null) : null };
}
