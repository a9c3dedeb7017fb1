import { describe, expect, it } from "vitest";
import { InvalidArgument, MAX_DELAY_MS, TaskError } from "@cairnq/protocol";
import type { TaskFailedEvent, WorkerErrorInfo } from "../src/index.js";
import { MemoryStore, waitFor } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

/** Runs `name` failing retryably until it has failed `times` times; the `task:failed` events, in order. */
async function failures(configure: (worker: ReturnType<typeof makeWorker>) => void, times: number, workerOptions = {}): Promise<TaskFailedEvent[]> {
  const store = new MemoryStore();
  const worker = makeWorker(store, { random: () => 0, ...workerOptions });
  configure(worker);
  const events: TaskFailedEvent[] = [];
  worker.on("task:failed", (e) => events.push(e));
  await store.submit({ name: "flaky", maxAttempts: times });
  void worker.run();
  await waitFor(() => events.length === times, 5000, `${times} failures`);
  return events;
}

describe("retry policy per task name", () => {
  it("retryBackoffMs / retryBackoffMaxMs replace the worker's for that name only (random pinned to 0: the window's lower half)", async () => {
    // Worker: 0 (no backoff). Task: base 8, cap 20 → windows 8, 16, 20 → delays 4, 8, 10.
    const events = await failures((worker) => {
      worker.task("flaky", { retryBackoffMs: 8, retryBackoffMaxMs: 20 }, () => {
        throw new TaskError("again", { code: "again", retryable: true });
      });
    }, 4);
    expect(events.slice(0, 3).map((e) => e.delayMs)).toEqual([4, 8, 10]);
    expect(events[3]?.willRetry).toBe(false);
  });

  it("a worker backoff at MAX_DELAY_MS settles: the store accepts every delay the worker's options allow", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { retryBackoffMs: MAX_DELAY_MS, retryBackoffMaxMs: MAX_DELAY_MS, random: () => 0 });
    worker.task("flaky", () => {
      throw new TaskError("again", { code: "again", retryable: true });
    });
    const events: TaskFailedEvent[] = [];
    worker.on("task:failed", (e) => events.push(e));
    const task = await store.submit({ name: "flaky", maxAttempts: 2 });
    void worker.run();
    await waitFor(() => events.length === 1, 5000, "the first failure");
    // Window min(cap, base) = MAX_DELAY_MS; random 0 takes its lower half.
    expect(events[0]).toMatchObject({ delayMs: MAX_DELAY_MS / 2, willRetry: true });
    const row = await store.get(task.id);
    expect(row).toMatchObject({ status: "queued", attempt: 1 });
    expect(row!.run_at_ms - row!.updated_at_ms).toBe(MAX_DELAY_MS / 2);
  });

  it("worker.task refuses a cap below the base in effect: the task's own, else the worker's when given explicitly", () => {
    const handler = () => null;
    // Both on the task.
    expect(() => makeWorker(new MemoryStore()).task("a", { retryBackoffMs: 5_000, retryBackoffMaxMs: 1_000 }, handler)).toThrow(
      expect.objectContaining({ name: "InvalidArgument", argument: "task 'a' options.retryBackoffMaxMs" }),
    );
    // The task's cap under the worker's base.
    const slow = makeWorker(new MemoryStore(), { retryBackoffMs: 10_000 });
    let caught: unknown;
    try {
      slow.task("b", { retryBackoffMaxMs: 2_000 }, handler);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgument);
    expect((caught as InvalidArgument).message).toMatch(/^task 'b' options\.retryBackoffMaxMs \(2000\) is below the worker's retryBackoffMs \(10000\): the cap clamps every backoff window/);
    // The task's base over the worker's cap.
    const capped = makeWorker(new MemoryStore(), { retryBackoffMaxMs: 30_000 });
    expect(() => capped.task("c", { retryBackoffMs: 60_000 }, handler)).toThrow(
      expect.objectContaining({ argument: "task 'c' options.retryBackoffMs", message: expect.stringMatching(/^the worker's retryBackoffMaxMs \(30000\) is below task 'c' options\.retryBackoffMs \(60000\)/) }),
    );
  });

  it("worker.task accepts a base above a cap that is only a default, and a task value replacing the worker's", () => {
    const handler = () => null;
    // No cap given anywhere (makeWorker's options give only retryBackoffMs): §6's default cap clamps it.
    expect(() => makeWorker(new MemoryStore()).task("a", { retryBackoffMs: 600_000 }, handler)).not.toThrow();
    // The task's own cap replaces the worker's lower one; the task's own base replaces the worker's higher one.
    const worker = makeWorker(new MemoryStore(), { retryBackoffMs: 60_000, retryBackoffMaxMs: 60_000 });
    expect(() => worker.task("b", { retryBackoffMs: 600_000, retryBackoffMaxMs: 900_000 }, handler)).not.toThrow();
    expect(() => worker.task("c", { retryBackoffMs: 1_000 }, handler)).not.toThrow();
    expect(() => worker.task("d", { retryBackoffMaxMs: 60_000 }, handler)).not.toThrow();
    expect(() => worker.task("e", { retryBackoff: () => 5 }, handler)).not.toThrow();
  });

  it("retryBackoff(attempt, error) decides the delay, sees the attempt number and what the handler threw, and is not asked after the last attempt", async () => {
    const seen: [number, unknown][] = [];
    const events = await failures((worker) => {
      worker.task(
        "flaky",
        {
          retryBackoff: (attempt, error) => {
            seen.push([attempt, error]);
            return attempt * 3;
          },
        },
        (ctx) => {
          throw new TaskError(`attempt ${ctx.attempt}`, { code: "again", retryable: true });
        },
      );
    }, 3);
    expect(events.slice(0, 2).map((e) => e.delayMs)).toEqual([3, 6]);
    expect(seen.map(([attempt]) => attempt)).toEqual([1, 2]);
    expect(seen[0]?.[1]).toBeInstanceOf(TaskError);
    expect((seen[1]?.[1] as Error).message).toBe("attempt 2");
  });

  it("ctx.fail passes its reason to retryBackoff; a non-retryable failure never calls it", async () => {
    const seen: unknown[] = [];
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("flaky", { retryBackoff: (_attempt, error) => (seen.push(error), 0) }, async (ctx, p: { retry: boolean }) => {
      await ctx.fail({ code: "why" }, { retryable: p.retry });
      return null;
    });
    const failed: TaskFailedEvent[] = [];
    worker.on("task:failed", (e) => failed.push(e));
    await store.submit({ name: "flaky", payload: { retry: false } });
    await store.submit({ name: "flaky", payload: { retry: true }, maxAttempts: 2 });
    void worker.run();
    await waitFor(() => failed.length === 3);
    expect(seen).toEqual([{ code: "why" }]);
  });

  it("a retryBackoff that throws or returns a non-integer is reported through onError, and the task still retries after the default backoff", async () => {
    const errors: [unknown, WorkerErrorInfo][] = [];
    let calls = 0;
    const events = await failures(
      (worker) => {
        worker.task(
          "flaky",
          {
            retryBackoff: () => {
              calls += 1;
              if (calls === 1) throw new Error("oops");
              return 1.5;
            },
          },
          () => {
            throw new TaskError("again", { code: "again", retryable: true });
          },
        );
      },
      3,
      { retryBackoffMs: 10, onError: (err: unknown, info: WorkerErrorInfo) => errors.push([err, info]) },
    );
    // The worker's default: base 10, random 0 → 5 then 10.
    expect(events.slice(0, 2).map((e) => e.delayMs)).toEqual([5, 10]);
    expect(errors).toHaveLength(2); // the third (last) attempt is not retried, so retryBackoff is not asked
    expect(errors[0]?.[0]).toBeInstanceOf(InvalidArgument);
    expect(String((errors[0]?.[0] as Error).message)).toMatch(/retryBackoff threw for attempt 1 \(oops\)/);
    expect(String((errors[1]?.[0] as Error).message)).toMatch(/returned 1\.5 for attempt 2.*integer/);
    expect(errors[0]?.[1].phase).toBe("execute");
  });

  it("bad retry options are an InvalidArgument at registration", () => {
    const worker = makeWorker(new MemoryStore());
    const handler = () => null;
    expect(() => worker.task("a", { retryBackoffMs: -1 }, handler)).toThrow(/retryBackoffMs must be an integer number of milliseconds from 0/);
    expect(() => worker.task("a", { retryBackoffMaxMs: 1.5 }, handler)).toThrow(InvalidArgument);
    expect(() => worker.task("a", { retryBackoff: 5 as never }, handler)).toThrow(/retryBackoff must be a function/);
    expect(() => worker.task("a", { retryBackoff: () => 1, retryBackoffMs: 10 }, handler)).toThrow(/set either the function or the two durations/);
  });
});
