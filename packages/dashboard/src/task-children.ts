/**
 * A task's children for its detail page, read through `list` alone.
 *
 * The TaskStore contract has no `parentId` filter (§5.4), only `rootId`, so
 * the children are found by paging the task's whole tree newest first and
 * keeping the rows whose `parent_id` is the task. Reading only the first page
 * showed a child with 200 newer tasks in its tree no children at all; the
 * pages now go on until the tree ends, `CHILDREN_SHOWN_MAX` children are
 * found, or `TREE_SCAN_MAX` rows are read — and the answer says when it was
 * cut, instead of passing a partial list off as whole.
 */
import type { ListInput, Task } from "@cairnq/protocol";

/** The most children a task page lists. */
export const CHILDREN_SHOWN_MAX = 200;

/** The most rows of a tree read to find them: 25 pages of 200, a bounded cost per page view. */
export const TREE_SCAN_MAX = 5000;

/** The bounds above as the task route sends them (`childrenLimits`), so the page's note names the server's numbers. */
export const CHILDREN_LIMITS = Object.freeze({ children: CHILDREN_SHOWN_MAX, treeRows: TREE_SCAN_MAX });

const PAGE_ROWS = 200;

/** The one method read here: a `CairnQ` client fits, and so does a test's fake. */
export interface TreeReader {
  list(input: ListInput): Promise<Task[]>;
}

/** What the task page shows of a task's children. */
export interface TaskChildren {
  /** Children found, newest first (by id), at most {@link CHILDREN_SHOWN_MAX}. */
  readonly children: Task[];
  /**
   * Why the list may be incomplete: `"children"` when the task has more than
   * {@link CHILDREN_SHOWN_MAX}, `"tree"` when its tree has more than
   * {@link TREE_SCAN_MAX} tasks and older children were not reached; `null`
   * when `children` is every child.
   */
  readonly cut: "children" | "tree" | null;
}

/**
 * Finds `task`'s children by paging its tree (`list({ rootId, order: "id",
 * beforeId })`) within the bounds above.
 *
 * @example
 * ```ts
 * const { children, cut } = await childrenOf(client, task);
 * ```
 */
export async function childrenOf(client: TreeReader, task: Task): Promise<TaskChildren> {
  const rootId = task.root_id ?? task.id;
  const children: Task[] = [];
  let beforeId: string | undefined;
  for (let read = 0; read < TREE_SCAN_MAX; ) {
    const limit = Math.min(PAGE_ROWS, TREE_SCAN_MAX - read);
    const page = await client.list({ rootId, order: "id", limit, ...(beforeId === undefined ? {} : { beforeId }) });
    read += page.length;
    for (const row of page) {
      if (row.parent_id !== task.id) continue;
      if (children.length === CHILDREN_SHOWN_MAX) return { children, cut: "children" };
      children.push(row);
    }
    if (page.length < limit) return { children, cut: null };
    beforeId = page[page.length - 1]?.id;
  }
  // The bound was reached on a full page: a tree of exactly TREE_SCAN_MAX tasks ends there, with every child seen.
  const older = await client.list({ rootId, order: "id", limit: 1, ...(beforeId === undefined ? {} : { beforeId }) });
  return { children, cut: older.length === 0 ? null : "tree" };
}
