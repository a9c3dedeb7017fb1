/**
 * `explain` of a task waiting on its group's limit, on a SQLite file: the
 * store's group reads say how many of the group run and what limit the last
 * claim enforced.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { taskRow } from "@cairnq/test-support/task-rows";
import { afterEach, expect, it } from "vitest";
import { explainTask } from "../src/explain.js";
import { CairnQ } from "../src/index.js";

let dir: string | null = null;
let cairnq: CairnQ | null = null;

afterEach(async () => {
  await cairnq?.close();
  if (dir !== null) rmSync(dir, { recursive: true, force: true });
  cairnq = null;
  dir = null;
});

it("says 'group acme: 2 of 2 running' when the task waits on its group's limit, and names the group otherwise", async () => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-explain-groups-"));
  cairnq = new CairnQ(new SQLiteStore(join(dir, "cairnq.db")));
  for (let i = 0; i < 3; i++) await cairnq.submit("export", { i }, { group: "acme" });
  const other = await cairnq.submit("export", { i: 9 }, { group: "globex" });
  const workerId = newWorkerId();
  const claimed = await cairnq.store.claim({ queues: ["default"], workerId, names: ["export"], limit: 2, flowControl: { export: { groupConcurrency: 2 } } });
  // The rotation took one of each group; a second claim fills acme's second slot.
  expect(claimed).toHaveLength(2);
  await cairnq.store.claim({ queues: ["default"], workerId, names: ["export"], limit: 1, flowControl: { export: { groupConcurrency: 2 } } });
  const waiting = (await cairnq.list({ name: "export", status: "queued" }))[0];
  expect(waiting).toBeDefined();
  const why = await cairnq.explain(waiting?.id as string);
  expect(why?.state).toBe("group-limit");
  expect(why?.summary).toContain("group acme: 2 of 2 running (groupConcurrency of 'export'), 1 queued");
  // A finished task is explained as before; the group reads are only asked about a due queued task.
  expect((await cairnq.explain(other.id))?.state).toBe("running");
});

it("explainTask names the group of a due task that is not at its limit", () => {
  const task = taskRow({ name: "export", queue: "default", run_at_ms: 1000, created_at_ms: 1000, updated_at_ms: 1000 });
  const verdict = explainTask(task, { nowMs: 2000, group: { group: "acme", running: 1, queued: 4, groupConcurrency: 2 } });
  expect(verdict.state).toBe("waiting");
  expect(verdict.summary).toContain("It is in group acme (1 running of 2).");
});
