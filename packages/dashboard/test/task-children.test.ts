/** childrenOf over a fake `list`: every cut it can report, without a store. */
import type { ListInput, Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { CHILDREN_SHOWN_MAX, TREE_SCAN_MAX, childrenOf } from "../src/task-children.js";

const id = (n: number): string => `task_${String(n).padStart(26, "0")}`;
const row = (n: number, parent: number | null): Task => ({ id: id(n), root_id: id(0), parent_id: parent === null ? null : id(parent) }) as Task;

/** A tree of `rows` (root first), listed as a store would: id order, newest first, keyset-paged. */
function fakeClient(rows: Task[]): { list: (input?: ListInput) => Promise<Task[]>; calls: ListInput[] } {
  const calls: ListInput[] = [];
  const desc = [...rows].sort((a, b) => (a.id < b.id ? 1 : -1));
  return {
    calls,
    list: (input: ListInput = {}) => {
      calls.push(input);
      const from = input.beforeId === undefined ? desc : desc.filter((r) => r.id < (input.beforeId ?? ""));
      return Promise.resolve(from.filter((r) => r.root_id === input.rootId).slice(0, input.limit));
    },
  };
}

describe("childrenOf", () => {
  it("finds a child older than many newer tasks of its tree, and reports no cut", async () => {
    const rows = [row(0, null), row(1, 0), row(2, 1), ...Array.from({ length: 450 }, (_, i) => row(3 + i, 0))];
    const client = fakeClient(rows);
    expect(await childrenOf(client, row(1, 0))).toEqual({ children: [row(2, 1)], cut: null });
    expect(client.calls.every((c) => c.order === "id" && c.rootId === id(0))).toBe(true);
  });

  it("stops at CHILDREN_SHOWN_MAX children and says the task has more", async () => {
    const rows = [row(0, null), ...Array.from({ length: CHILDREN_SHOWN_MAX + 1 }, (_, i) => row(1 + i, 0))];
    const { children, cut } = await childrenOf(fakeClient(rows), row(0, null));
    expect(children).toHaveLength(CHILDREN_SHOWN_MAX);
    expect(cut).toBe("children");
  });

  it("lists exactly CHILDREN_SHOWN_MAX children with no cut", async () => {
    const rows = [row(0, null), ...Array.from({ length: CHILDREN_SHOWN_MAX }, (_, i) => row(1 + i, 0))];
    expect((await childrenOf(fakeClient(rows), row(0, null))).cut).toBeNull();
  });

  it("reads at most TREE_SCAN_MAX rows of the tree and says older children were not reached", async () => {
    const rows = [row(0, null), row(1, 0), row(2, 1), ...Array.from({ length: TREE_SCAN_MAX }, (_, i) => row(3 + i, 0))];
    const client = fakeClient(rows);
    expect(await childrenOf(client, row(1, 0))).toEqual({ children: [], cut: "tree" });
    // The bound's rows, and one more to tell a longer tree from one that ends at the bound.
    expect(client.calls.reduce((n, c) => n + (c.limit ?? 0), 0)).toBe(TREE_SCAN_MAX + 1);
  });

  it("reports no cut for a tree of exactly TREE_SCAN_MAX tasks, all read", async () => {
    const rows = [row(0, null), row(1, 0), ...Array.from({ length: TREE_SCAN_MAX - 2 }, (_, i) => row(2 + i, 0))];
    expect(await childrenOf(fakeClient(rows), row(1, 0))).toEqual({ children: [], cut: null });
  });
});
