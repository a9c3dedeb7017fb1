/**
 * Reads beyond §14: unknown ids, list ordering and paging, stats of terminal
 * rows, queue_depth arguments (§5.2–§5.6).
 */
import type { Task } from "@cairnq/protocol";
import { newTaskId } from "@cairnq/protocol/adapter";
import type { ConformanceCase } from "../case.js";
import { ids, sortedIds } from "../case.js";

export const readCases: readonly ConformanceCase[] = [
  {
    id: "read-unknown-returns-null",
    title: "get, getByKey, getStatus, getStatusByKey, cancel(ByKey) and retry(ByKey) of an unknown id or key → null",
    spec: "§2.5, §5.2, §5.3, §5.7, §5.8",
    async run(t) {
      await t.submit("present", { key: "present" });
      const unknown = newTaskId();
      t.expect(await t.store.get(unknown)).toBeNull();
      t.expect(await t.store.getStatus(unknown)).toBeNull();
      t.expect(await t.store.cancel(unknown)).toBeNull();
      t.expect(await t.store.retry(unknown)).toBeNull();
      t.expect(await t.store.getByKey("absent")).toBeNull();
      t.expect(await t.store.getStatusByKey("absent")).toBeNull();
      t.expect(await t.store.cancelByKey("absent")).toBeNull();
      t.expect(await t.store.retryByKey("absent", { resetAttempt: true })).toBeNull();
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "list-order-limit-offset",
    title: "list orders by created_at_ms DESC, id DESC and pages with limit and offset",
    spec: "§5.4",
    async run(t) {
      for (let i = 0; i < 3; i++) {
        await Promise.all([t.submit("job", { payload: { i, j: 0 } }), t.submit("job", { payload: { i, j: 1 } })]);
        await t.sleep(3);
      }
      const all = await t.store.list();
      t.expect(all).toHaveLength(6);
      const expected = [...all].sort((a, b) => b.created_at_ms - a.created_at_ms || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      t.expect(ids(all)).toEqual(ids(expected));
      t.expect(ids(await t.store.list({ limit: 2 }))).toEqual(ids(all.slice(0, 2)));
      t.expect(ids(await t.store.list({ limit: 2, offset: 2 }))).toEqual(ids(all.slice(2, 4)));
      t.expect(ids(await t.store.list({ offset: 5 }))).toEqual(ids(all.slice(5)));
      t.expect(await t.store.list({ offset: 6 })).toEqual([]);
      t.expect(await t.store.list({ limit: 0 })).toEqual([]);
    },
  },
  {
    id: "list-order-id-keyset",
    title: "list with order 'id' returns id DESC and pages by beforeId (with filters), seeing nothing twice",
    spec: "§5.4 (keyset extension)",
    async run(t) {
      const made: Task[] = [];
      for (let i = 0; i < 7; i++) made.push(await t.submit(i % 2 === 0 ? "even" : "odd", { queue: i < 5 ? "q" : "r", payload: { i } }));
      const byIdDesc = [...made].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      t.expect(ids(await t.store.list({ order: "id" }))).toEqual(ids(byIdDesc));
      const pages: string[][] = [];
      let beforeId: string | undefined;
      for (;;) {
        const page = await t.store.list({ order: "id", limit: 3, ...(beforeId === undefined ? {} : { beforeId }) });
        if (page.length === 0) break;
        pages.push(ids(page));
        beforeId = page[page.length - 1]?.id;
      }
      t.expect(pages).toEqual([ids(byIdDesc.slice(0, 3)), ids(byIdDesc.slice(3, 6)), ids(byIdDesc.slice(6))]);
      const evenInQ = byIdDesc.filter((task) => task.name === "even" && task.queue === "q");
      t.expect(evenInQ).toHaveLength(3);
      const first = await t.store.list({ order: "id", name: "even", queue: "q", limit: 2 });
      t.expect(ids(first)).toEqual(ids(evenInQ.slice(0, 2)));
      const rest = await t.store.list({ order: "id", name: "even", queue: "q", limit: 2, beforeId: first[1]?.id ?? "" });
      t.expect(ids(rest)).toEqual(ids(evenInQ.slice(2)));
      // A cursor need not be an existing id: everything strictly before it.
      t.expect(ids(await t.store.list({ order: "id", beforeId: "task_" }))).toEqual([]);
      t.expect(ids(await t.store.list({ order: "id", beforeId: "task_ZZZZZZZZZZZZZZZZZZZZZZZZZZ" }))).toEqual(ids(byIdDesc));
    },
  },
  {
    id: "list-default-limit-100",
    title: "list returns at most 100 rows by default",
    spec: "§5.4",
    async run(t) {
      await Promise.all(Array.from({ length: 101 }, (_, n) => t.submit("many", { payload: { n } })));
      t.expect(await t.store.list()).toHaveLength(100);
      t.expect(await t.store.list({ limit: 200 })).toHaveLength(101);
    },
  },
  {
    id: "list-status-root-and-combined-filters",
    title: "list filters by status and root_id, and AND-s every filter given",
    spec: "§5.4",
    async run(t) {
      const root = await t.submit("root", { queue: "q" });
      const child = await t.submit("child", { queue: "q", parentId: root.id, rootId: root.id });
      const otherChild = await t.submit("child", { queue: "r", parentId: root.id, rootId: root.id });
      const stranger = await t.submit("child", { queue: "q" });
      await t.claimOne(t.w1, { queues: ["q"], names: ["root"] });
      t.expect(sortedIds(await t.store.list({ rootId: root.id }))).toEqual(sortedIds([root, child, otherChild]));
      t.expect(ids(await t.store.list({ rootId: root.id, queue: "q", name: "child" }))).toEqual([child.id]);
      t.expect(ids(await t.store.list({ status: "running" }))).toEqual([root.id]);
      t.expect(sortedIds(await t.store.list({ status: "queued", queue: "q" }))).toEqual(sortedIds([child, stranger]));
      t.expect(await t.store.list({ status: "failed" })).toEqual([]);
    },
  },
  {
    id: "stats-count-terminal-until-purged",
    title: "stats count every status, terminal rows included, until they are purged",
    spec: "§5.5",
    async run(t) {
      const zero = { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };
      const ok = await t.submit("ok");
      await t.claimOne(t.w1, { names: ["ok"] });
      await t.store.complete({ taskId: ok.id, workerId: t.w1, result: null });
      const bad = await t.submit("bad");
      await t.claimOne(t.w1, { names: ["bad"] });
      await t.store.fail({ taskId: bad.id, workerId: t.w1, error: {}, retryable: false });
      const gone = await t.submit("gone");
      await t.store.cancel(gone.id);
      t.expect(await t.store.stats()).toEqual({ default: { ...zero, succeeded: 1, failed: 1, canceled: 1 } });
      await t.sleep(20);
      t.expect(await t.store.purge({})).toHaveLength(3);
      t.expect(await t.store.stats()).toEqual({});
      t.expect(await t.store.stats("default")).toEqual({ default: zero });
    },
  },
  {
    id: "queue-depth-ignores-running-and-terminal",
    title: "queue_depth counts only queued rows: running and terminal rows leave headroom",
    spec: "§5.6",
    async run(t) {
      await t.submit("job");
      await t.submit("job");
      const done = await t.claimOne(t.w1);
      await t.store.complete({ taskId: done.id, workerId: t.w1, result: null });
      await t.submit("job");
      await t.claimOne(t.w1);
      t.expect(await t.store.queueDepth("default", 2)).toBe(1);
      t.expect(await t.store.queueDepth("default", 1)).toBe(0);
    },
  },
];
