import type { ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { LONG_MS, exited, nextLine, openStore, pause, spawnFixture, tempFile, timed, wakeupsOf } from "../helpers.js";

/** A `store-child.ts` process on `file`, and a function sending it one command. */
async function startChild(file: string): Promise<(command: Record<string, unknown>) => Promise<{ ok?: boolean; id?: string; error?: string }>> {
  const child: ChildProcessWithoutNullStreams = spawnFixture("store-child.ts", [file]);
  await nextLine(child, (line) => line === "ready");
  return async (command) => {
    const reply = nextLine(child, (line) => line.startsWith("{"));
    child.stdin.write(`${JSON.stringify(command)}\n`);
    const out = JSON.parse(await reply) as { ok?: boolean; id?: string; error?: string };
    if (out.error !== undefined) throw new Error(`child: ${out.error}`);
    return out;
  };
}

describe("SQLiteWakeups on a database file", () => {
  it("a claim waiter in this process wakes when another process submits to its queue", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    const send = await startChild(file);
    const wait = timed(() => store.claimWake(["jobs"], LONG_MS));
    await send({ op: "submit", queue: "jobs" });
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    expect(wakeupsOf(store).mode).toBe("watch");
    await send({ op: "close" });
  });

  it("a task-done waiter in this process wakes when another process completes the task, not when it claims it", async () => {
    const file = tempFile();
    const store = openStore(file);
    const task = await store.submit({ name: "job", queue: "jobs" });
    const send = await startChild(file);
    const wait = timed(() => store.taskDoneWake(task.id, LONG_MS));
    const claimed = await send({ op: "claim", queue: "jobs", workerId: "child" });
    expect(claimed.id).toBe(task.id);
    await pause(50);
    expect(wait.settled()).toBe(false);
    await send({ op: "complete", taskId: task.id, workerId: "child" });
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    expect((await store.getStatus(task.id))?.status).toBe("succeeded");
    await send({ op: "close" });
  });

  it("a store signals its commits through the wake file, and a waiter hears a raw writer's commit by the backstop", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    expect(fs.existsSync(`${file}-wake`)).toBe(true);
    const send = await startChild(file);
    // The child's store writes the wake file after its commit (a watcher of that file alone hears it).
    const heard = new Promise<void>((resolve) => {
      const watcher = fs.watch(`${file}-wake`, () => {
        watcher.close();
        resolve();
      });
    });
    await send({ op: "submit", queue: "elsewhere" });
    await heard;
    // A writer that does not signal (the raw driver, as another protocol-v1 implementation would write).
    const raw = new Database(file);
    try {
      const wait = timed(() => store.claimWake(["jobs"], LONG_MS));
      await pause(20);
      raw
        .prepare(
          "INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id, created_at_ms, updated_at_ms) " +
            "VALUES ('task_raw', 'job', 'jobs', 'queued', 'null', '{}', 3, 0, 0, 'task_raw', 0, 0)",
        )
        .run();
      // Within the backstop (100 ms) and its timer's slack, long before the wait's own timeout.
      expect(await wait.done).toBeLessThan(1_000);
    } finally {
      raw.close();
    }
    await send({ op: "close" });
  });

  it("a pending wake does not hold the process open", async () => {
    const file = tempFile();
    const child = spawnFixture("pending-wake.ts", [file]);
    expect(JSON.parse(await nextLine(child))).toEqual({ mode: "watch" });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("still running"), 8_000)));
    const code = await Promise.race([exited(child), deadline]);
    clearTimeout(timer);
    expect(code).toBe(0);
  });
});
