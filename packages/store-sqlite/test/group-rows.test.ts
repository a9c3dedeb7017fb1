import Database from "better-sqlite3";
import type { Task } from "@cairnq/protocol";
import type { SQLiteStore } from "../src/index.js";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "./helpers.js";

/** The state of each group row of name `g`, by its task's payload id. */
function rowStates(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT json_extract(t.payload, '$.id') AS id, tg.state AS state FROM cairnq_ext_task_groups tg JOIN cairnq_tasks t ON t.id = tg.task_id WHERE tg.name = 'g'")
      .all() as { id: string; state: string }[];
    return Object.fromEntries(rows.map((row) => [row.id, row.state]));
  } finally {
    db.close();
  }
}

function setState(file: string, taskId: string, state: string): void {
  const db = new Database(file);
  try {
    db.prepare("UPDATE cairnq_ext_task_groups SET state = ? WHERE task_id = ?").run(state, taskId);
  } finally {
    db.close();
  }
}

function claim(store: SQLiteStore, limit: number, groupConcurrency = 1): Promise<Task[]> {
  return store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["g"], limit, probe: false, flowControl: { g: { groupConcurrency } } });
}

const idOf = (task: Task): string => (task.payload as { id: string }).id;

describe("group rows (group-draw.ts, group-requeue.ts)", () => {
  it("a grouped task's row is written once, at its claim: nothing is written when it ends, and later claims leave it alone", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    try {
      // Priorities order the group's tasks (ids of one millisecond need not sort by submit order).
      await store.submit({ name: "g", group: "a", payload: { id: "a1" }, priority: 1 });
      await store.submit({ name: "g", group: "a", payload: { id: "a2" } });
      const [first] = await claim(store, 1);
      expect(rowStates(file)).toEqual({ a1: "claimed", a2: "queued" });
      await store.complete({ taskId: (first as Task).id, workerId: "w1", result: null });
      // The next claim reads the running tasks, not the rows: a1's row stays as its claim left it.
      expect((await claim(store, 1)).map(idOf)).toEqual(["a2"]);
      expect(rowStates(file)).toEqual({ a1: "claimed", a2: "claimed" });
    } finally {
      await store.close();
    }
  });

  it("a retried task whose row an earlier store marked `done` goes back to its group ahead of another group's backlog (an upgraded database)", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    try {
      for (let i = 0; i < 30; i++) await store.submit({ name: "g", group: "a", payload: { id: `a${i}` } });
      const b = await store.submit({ name: "g", group: "b", payload: { id: "b" } });
      const rows = await claim(store, 2);
      expect(rows.map((task) => idOf(task).slice(0, 1)).sort()).toEqual(["a", "b"]);
      for (const row of rows) await store.fail({ taskId: row.id, workerId: "w1", error: { code: "final" }, retryable: false });
      // What the store before this one wrote once a sweep saw the task finished.
      setState(file, b.id, "done");
      expect((await store.retry(b.id))?.status).toBe("queued");
      expect(rowStates(file).b).toBe("requeued");
      // One task of a (ids of one millisecond need not sort by submit order) and b.
      expect((await claim(store, 2)).map((task) => idOf(task).slice(0, 1)).sort()).toEqual(["a", "b"]);
      expect(rowStates(file).b).toBe("claimed");
    } finally {
      await store.close();
    }
  });

  it("a stale mark (its task was taken again or ended before a group claim saw it) goes to `claimed`, out of the walk", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    try {
      const a = await store.submit({ name: "g", group: "a", payload: { id: "a" }, priority: 1 });
      await store.submit({ name: "g", group: "a", payload: { id: "a2" } });
      expect((await claim(store, 1)).map(idOf)).toEqual(["a"]);
      await store.complete({ taskId: a.id, workerId: "w1", result: null });
      setState(file, a.id, "requeued");
      expect((await claim(store, 1)).map(idOf)).toEqual(["a2"]);
      expect(rowStates(file).a).toBe("claimed");
    } finally {
      await store.close();
    }
  });

  it("an upgraded database: the group tables of an earlier store (one walk index over every state) get the two partial indexes, and a claim leaves the walk", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    const indexes = (): string[] => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'cairnq_ext_task_groups' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((row) => row.name);
      } finally {
        db.close();
      }
    };
    try {
      await store.submit({ name: "g", group: "a", payload: { id: "a1" } });
      // What the stores before this one created beside the table.
      const db = new Database(file);
      try {
        db.exec("DROP INDEX cairnq_ext_task_groups_queued_idx; DROP INDEX cairnq_ext_task_groups_requeued_idx");
        db.exec("CREATE INDEX cairnq_ext_task_groups_walk_idx ON cairnq_ext_task_groups (name, state, group_key, priority DESC, task_id)");
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
    const upgraded = openStore(file);
    await upgraded.connect();
    try {
      await upgraded.submit({ name: "g", group: "a", payload: { id: "a2" } });
      expect(indexes()).toEqual(["cairnq_ext_task_groups_queued_idx", "cairnq_ext_task_groups_requeued_idx"]);
      expect((await claim(upgraded, 2, 2)).map(idOf).sort()).toEqual(["a1", "a2"]);
      expect(rowStates(file)).toEqual({ a1: "claimed", a2: "claimed" });
      const db = new Database(file, { readonly: true });
      try {
        // A claimed row is in neither partial index; the walk reads the queued one.
        const walk = db.prepare("EXPLAIN QUERY PLAN SELECT task_id FROM cairnq_ext_task_groups WHERE name = 'g' AND state = 'queued' AND group_key = 'a' ORDER BY priority DESC, task_id").all() as { detail: string }[];
        expect(walk.map((row) => row.detail).join(" | ")).toContain("cairnq_ext_task_groups_queued_idx");
        expect(db.prepare("SELECT count(*) AS n FROM cairnq_ext_task_groups INDEXED BY cairnq_ext_task_groups_queued_idx WHERE name = 'g' AND state = 'queued'").get()).toEqual({ n: 0 });
      } finally {
        db.close();
      }
    } finally {
      await upgraded.close();
    }
  });
});
