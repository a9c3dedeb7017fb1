import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Task, TaskStore } from "@cairnq/protocol";
import { afterEach, describe, expect, it } from "vitest";
// The SQLite store from its sources by path: it is only this one test's yardstick, and declaring it a
// dependency of the Postgres store would change the workspace lockfile for a test.
import { SQLiteStore } from "@cairnq/store-sqlite";
import { openStore } from "../helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** One fixed sequence of operations touching every transition kind; returns what a caller could observe. */
async function drive(store: TaskStore): Promise<unknown> {
  const w = "worker_same";
  const claim = async (queue: string, names: string[] | null = null): Promise<Task> => {
    const [task] = await store.claim({ queues: [queue], names, workerId: w, leaseMs: 60_000 });
    if (task === undefined) throw new Error(`nothing to claim on ${queue} ${JSON.stringify(names)}`);
    return task;
  };
  const a = await store.submit({ name: "alpha", payload: { n: 1, s: "é漢" }, queue: "q1", priority: 2, metadata: { m: [1, null] }, correlationId: "c1", maxAttempts: 2 });
  await store.submit({ name: "beta", key: "k1" });
  const c = await store.submit({ name: "gamma", key: "k1", conflict: "replace", payload: [1, "two", { three: 3 }] });
  await store.submit({ name: "delta", payload: "just a string" });
  await claim("q1");
  await store.progress({ taskId: a.id, workerId: w, progress: 0.5, message: "half" });
  await store.fail({ taskId: a.id, workerId: w, error: { type: "TaskError", code: "x", message: "m", retryable: true, details: {} }, retryable: true });
  await claim("q1");
  await store.progress({ taskId: a.id, workerId: w, progress: null, message: "again" });
  await store.complete({ taskId: a.id, workerId: w, result: { ok: true, list: [0, null] } });
  await claim("default", ["gamma"]);
  await store.cancel(c.id);
  await store.fail({ taskId: c.id, workerId: w, error: { code: "late" }, retryable: true });
  await store.retry(c.id, { resetAttempt: true });
  const d = await claim("default", ["delta"]);
  await store.heartbeat({ taskId: d.id, workerId: w, leaseMs: 60_000 });
  await store.succeed({ taskId: d.id, workerId: w, result: 7, message: "done" });
  await store.submit({ name: "eps", key: "k2", queue: "q2" });
  await store.cancelByKey("k2");
  await store.retryByKey("k2");
  const rows = (await store.list({ limit: 100 })).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return {
    rows: rows.map(normalize),
    keys: { k1: (await store.getByKey("k1"))?.name, k2: (await store.getByKey("k2"))?.name },
    stats: await store.stats(),
    depth: await store.queueDepth("default", 5),
  };
}

/** A row without what legitimately differs between backends: ids and times (kept only as set / not set). */
function normalize(task: Task): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(task)) {
    if (column === "id" || column === "root_id") continue;
    out[column] = column.endsWith("_ms") ? (value === null ? null : "set") : value;
  }
  return out;
}

describe("SQLite and Postgres agree", () => {
  it("the same operations leave identical rows on both backends (ignoring ids and times)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-cross-"));
    dirs.push(dir);
    const sqlite = new SQLiteStore(path.join(dir, "cairnq.db"));
    let onSqlite: unknown;
    try {
      onSqlite = await drive(sqlite);
    } finally {
      await sqlite.close();
    }
    const onPostgres = await drive(openStore());
    expect(onPostgres).toEqual(onSqlite);
    expect((onPostgres as { rows: unknown[] }).rows).toHaveLength(5);
  });
});
