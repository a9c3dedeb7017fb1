import type { Task } from "@cairnq/protocol";
import { InvalidArgument, TaskTimeout } from "@cairnq/protocol";
import { describeTimeout, nextPollInterval, resolveWaitOptions } from "@cairnq/protocol/sdk";
import { describe, expect, it } from "vitest";
import type { RuntimeClock } from "@cairnq/runtime";
import { systemClock } from "@cairnq/runtime";
import { CairnQ } from "../src/index.js";
import { claimOne, claimWhenQueued, delay, MemoryStore, RecordingStore } from "./support.js";

/** Polls `predicate` every 2 ms (a loaded machine runs the wait's timers late: wait for what it did, not for a time). */
async function until(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(2);
  }
}

async function timeoutOf(promise: Promise<unknown>): Promise<TaskTimeout> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TaskTimeout);
  return error as TaskTimeout;
}

describe("poll interval", () => {
  it("grows by half, at least by one, up to the maximum (§7)", () => {
    const seq = [100];
    while (seq.length < 7) seq.push(nextPollInterval(seq.at(-1)!, 500));
    expect(seq).toEqual([100, 150, 225, 337, 500, 500, 500]);
    expect(nextPollInterval(1, 10)).toBe(2);
    expect(nextPollInterval(2, 10)).toBe(3);
    expect(nextPollInterval(9, 10)).toBe(10);
  });

  it("probes the status every poll, sleeps on taskDoneWake with the growing interval, reads the row only once terminal", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const worker = await claimOne(store);
    const sleeps: number[] = [];
    store.onWake = async (taskId, ms) => {
      expect(taskId).toBe(task.id);
      sleeps.push(ms);
      if (sleeps.length === 6) await store.complete({ taskId: task.id, workerId: worker.workerId, result: { ok: true } });
    };
    const done = await client.wait(task.id);
    expect(done.status).toBe("succeeded");
    expect(done.result).toEqual({ ok: true });
    expect(sleeps).toEqual([100, 150, 225, 337, 500, 500]);
    expect(store.count("getStatus")).toBe(7);
    expect(store.count("get")).toBe(1);
  });

  it("honours pollMs and maxPollMs", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const sleeps: number[] = [];
    store.onWake = async (_id, ms) => {
      sleeps.push(ms);
      if (sleeps.length === 5) await store.cancel(task.id);
    };
    const done = await client.wait(task.id, { pollMs: 10, maxPollMs: 30 });
    expect(done.status).toBe("canceled");
    expect(sleeps).toEqual([10, 15, 22, 30, 30]);
  });

  it("never sleeps past the deadline", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 60, pollMs: 40 }));
    const sleeps = store.calls.filter((c) => c.method === "taskDoneWake").map((c) => c.args[1] as number);
    expect(sleeps[0]).toBe(40);
    expect(sleeps.slice(1).every((ms) => ms <= 21)).toBe(true);
    expect(error.task?.id).toBe(task.id);
  });

  it("returns an already terminal task after one probe and one read, without sleeping", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    await store.cancel(task.id);
    const done = await client.wait(task.id);
    expect(done.status).toBe("canceled");
    expect(store.count("taskDoneWake")).toBe(0);
    expect([store.count("getStatus"), store.count("get")]).toEqual([1, 1]);
  });
});

describe("wait options", () => {
  it("applies the §7 defaults", () => {
    expect(resolveWaitOptions({})).toEqual({ timeoutMs: 30_000, pollMs: 100, maxPollMs: 500, signal: undefined });
    expect(resolveWaitOptions({ pollMs: 800 })).toMatchObject({ pollMs: 800, maxPollMs: 800 });
  });

  it.each([
    [{ timeoutMs: -1 }, "timeoutMs"],
    [{ timeoutMs: 1.5 }, "timeoutMs"],
    [{ pollMs: 0 }, "pollMs"],
    [{ maxPollMs: "5" }, "maxPollMs"],
    [{ pollMs: 100, maxPollMs: 50 }, "maxPollMs"],
    [{ signal: {} }, "signal"],
    [{ timeout: 5 }, "timeout"],
  ])("rejects %o", async (options, argument) => {
    const client = new CairnQ(new MemoryStore());
    const error = await client.wait("task_x", options as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
  });

  it("names waitTimeoutMs for call", () => {
    expect(() => resolveWaitOptions({ timeoutMs: -5 }, "waitTimeoutMs")).toThrow(/waitTimeoutMs must be an integer/);
  });

  it("rejects an empty id or key", async () => {
    const client = new CairnQ(new MemoryStore());
    await expect(client.wait("")).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.waitByKey("")).rejects.toBeInstanceOf(InvalidArgument);
  });
});

describe("abort", () => {
  it("rejects with the signal's reason, leaving the task alone", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit("job");
    const controller = new AbortController();
    const waiting = client.wait(task.id, { signal: controller.signal });
    await delay(5);
    controller.abort(new Error("user left"));
    await expect(waiting).rejects.toThrow("user left");
    expect((await client.getStatus(task.id))?.status).toBe("queued");
  });

  it("rejects at once when already aborted", async () => {
    const client = new CairnQ(new MemoryStore());
    await expect(client.waitByKey("k", { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("call with an already-aborted signal rejects with its reason and submits nothing, as fetch does", async () => {
    const client = new CairnQ(new MemoryStore());
    const reason = new Error("client went away");
    await expect(client.call("charge", { amount: 100 }, { signal: AbortSignal.abort(reason), key: "charge:1" })).rejects.toBe(reason);
    await expect(client.call("charge", {}, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
    expect(await client.list()).toEqual([]);
    expect(await client.getByKey("charge:1")).toBeNull();
  });

  it("call with a signal that fires after the submit ends the wait with its reason; the task keeps going", async () => {
    const client = new CairnQ(new MemoryStore());
    const controller = new AbortController();
    const calling = client.call("charge", {}, { signal: controller.signal, key: "charge:2" });
    await delay(5);
    controller.abort(new Error("user left"));
    await expect(calling).rejects.toThrow("user left");
    expect((await client.getStatusByKey("charge:2"))?.status).toBe("queued");
  });

  it("aborts the plain sleep of a key with no task", async () => {
    const client = new CairnQ(new MemoryStore());
    const controller = new AbortController();
    const waiting = client.waitByKey("nothing-yet", { signal: controller.signal, pollMs: 10_000, maxPollMs: 10_000 });
    await delay(5);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
  });
});

describe("waitByKey", () => {
  it("follows a replace to the new task", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const first = await client.submit("job", { v: 1 }, { key: "k" });
    const waiting = client.waitByKey("k", { pollMs: 5, maxPollMs: 5 });
    // The wait has resolved the key to the first task once it sleeps on that task's wake.
    await until(() => store.calls.some((c) => c.method === "taskDoneWake" && c.args[0] === first.id), "a sleep on the first task");
    const second = await client.submit("job", { v: 2 }, { key: "k", conflict: "replace" });
    expect(second.id).not.toBe(first.id);
    // The old task is now canceled (terminal), yet the wait keeps going: the key points at the new one.
    // The old task is canceled and the wait re-resolves the key every poll: it sleeps on the new task next.
    await until(() => store.calls.some((c) => c.method === "taskDoneWake" && c.args[0] === second.id), "a sleep on the second task");
    const worker = await claimOne(store);
    expect(worker.id).toBe(second.id);
    await store.complete({ taskId: second.id, workerId: worker.workerId, result: 2 });
    const done = await waiting;
    expect(done.id).toBe(second.id);
    expect(done.result).toBe(2);
    expect((await client.get(first.id))?.status).toBe("canceled");
    const wokenFor = new Set(store.calls.filter((c) => c.method === "taskDoneWake").map((c) => c.args[0]));
    expect(wokenFor).toEqual(new Set([first.id, second.id]));
  });

  it("waits for a key that has no task yet", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const waiting = client.waitByKey("later", { pollMs: 5, maxPollMs: 5 });
    await until(() => store.count("getStatusByKey") > 1, "a second poll of the key");
    // No task to wake on: plain sleeps only.
    expect(store.count("taskDoneWake")).toBe(0);
    const task = await client.submit("job", {}, { key: "later" });
    const worker = await claimWhenQueued(store);
    await store.fail({ taskId: task.id, workerId: worker.workerId, error: { code: "x" }, retryable: false });
    const done = await waiting;
    expect(done).toMatchObject({ id: task.id, status: "failed" });
  });
});

describe("TaskTimeout", () => {
  it("carries the task id, no key and the last row for a by-id wait", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit("summarize", {}, { queue: "llm" });
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 30, pollMs: 5 }));
    expect(error.taskId).toBe(task.id);
    expect(error.key).toBeNull();
    expect(error.task).toMatchObject({ id: task.id, status: "queued", attempt: 0 });
    expect(error.message).toBe(
      `task ${task.id} ('summarize') did not finish within 30ms: queued and never claimed — ` +
        `is a worker running with a handler for 'summarize' on queue 'llm' against this database? ` +
        `If one is, it is busy or held back by a limit it sets on 'summarize' (globalConcurrency, rateLimit), which this message does not check (explain tells a full rate window)`,
    );
  });

  it("carries the key and the resolved task id for a by-key wait", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit("job", {}, { key: "order-7" });
    const error = await timeoutOf(client.waitByKey("order-7", { timeoutMs: 0 }));
    expect(error).toMatchObject({ taskId: task.id, key: "order-7" });
    expect(error.task?.id).toBe(task.id);
    expect(error.message).toContain(`task ${task.id} ('job', key 'order-7') did not finish within 0ms`);
  });

  it("reports a task that does not exist, by id", async () => {
    const client = new CairnQ(new MemoryStore());
    const error = await timeoutOf(client.wait("task_01J00000000000000000000000", { timeoutMs: 0 }));
    expect(error).toMatchObject({ taskId: "task_01J00000000000000000000000", key: null, task: null });
    expect(error.message).toMatch(/^task task_01J0+ was not found within 0ms: no row has that id/);
  });

  it("reports a key that points at nothing, with the key as task id", async () => {
    const client = new CairnQ(new MemoryStore());
    const error = await timeoutOf(client.waitByKey("ghost", { timeoutMs: 10, pollMs: 2 }));
    expect(error).toMatchObject({ taskId: "ghost", key: "ghost", task: null });
    expect(error.message).toMatch(/^no task with key 'ghost' was found within 10ms/);
  });

  it("names a delayed task and when it runs", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit("job", {}, { runAtDelayMs: 60_000, maxAttempts: 4 });
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 0 }));
    expect(error.message).toMatch(/: delayed, attempt 0\/4, next run in \d+ms$/);
  });

  it("names a task waiting to retry, its last error and when it runs next", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const worker = await claimOne(store);
    await store.fail({ taskId: task.id, workerId: worker.workerId, error: { message: "upstream 503" }, delayMs: 60_000 });
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 0 }));
    expect(error.task).toMatchObject({ status: "queued", attempt: 1 });
    expect(error.message).toMatch(/: retrying after attempt 1\/3 \(last error: upstream 503\), next run in \d+ms$/);
  });

  it("names a requeued task that is due but not re-claimed", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const worker = await claimOne(store);
    await store.fail({ taskId: task.id, workerId: worker.workerId, error: { message: "flaky" }, delayMs: 0 });
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 0 }));
    expect(error.message).toContain(": queued again after attempt 1/3 (last error: flaky) and not yet re-claimed — are workers with a handler for 'job' on queue 'default' running and free (and not held back by a limit they set on it: globalConcurrency, rateLimit)?");
  });

  it("names a running task waiting for its handler to see a cancel", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    await claimOne(store);
    await client.cancel(task.id);
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 0 }));
    expect(error.task?.cancel_requested_at_ms).not.toBeNull();
    expect(error.message).toContain(": running attempt 1/3 with a cancel requested — waiting for the handler to see the cancel");
  });

  it("names a running task, its worker and progress", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const worker = await claimOne(store);
    await store.progress({ taskId: task.id, workerId: worker.workerId, progress: 0.4, message: "page 2" });
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 0 }));
    expect(error.message).toContain(`: running attempt 1/3 on ${worker.workerId}, progress 0.4 ("page 2") — the handler is still working`);
  });

  it("describes a row that turned terminal only after the deadline", () => {
    const row = { id: "task_1", name: "job", status: "failed", attempt: 1, max_attempts: 1 } as Task;
    expect(describeTimeout({ id: "task_1", key: null, task: row, timeoutMs: 5, nowMs: 0 })).toContain(
      ": failed, but the row was read only after the deadline",
    );
    expect(describeTimeout({ id: null, key: null, task: null, timeoutMs: 5, nowMs: 0 })).toMatch(/^task \? was not found/);
  });

  it("returns a task that finished on the timeout beat instead of timing out", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit("job");
    const worker = await claimOne(store);
    const get = store.get.bind(store);
    store.get = async (id: string) => {
      // The status probe said running; the task succeeds just before the full read.
      await store.complete({ taskId: id, workerId: worker.workerId, result: "late" });
      return get(id);
    };
    const done = await client.wait(task.id, { timeoutMs: 0 });
    expect(done).toMatchObject({ status: "succeeded", result: "late" });
  });
});

describe("CairnQOptions.clock", () => {
  /** A clock whose time moves only by the sleeps taken on it (the store's wake sleeps are routed to it too). */
  function movedBySleeps(startMs: number): RuntimeClock & { slept: number[] } {
    let ms = startMs;
    const slept: number[] = [];
    return {
      slept,
      now: () => ms,
      monotonicMs: () => ms - startMs,
      startTimer: systemClock.startTimer,
      sleep: (duration) => {
        slept.push(duration);
        ms += duration;
        return Promise.resolve();
      },
    };
  }

  it("wait's deadline and the timeout message are read on the client's clock, not the system's", async () => {
    // Two hours behind the store's clock (the system's), so the delayed task is three hours away on the client's.
    const clock = movedBySleeps(Date.now() - 7_200_000);
    const store = new RecordingStore();
    store.onWake = (_id, timeoutMs) => clock.sleep(timeoutMs);
    const client = new CairnQ(store, { clock });
    const task = await client.submit("job", {}, { runAtDelayMs: 3_600_000 });
    const startedAt = performance.now();
    const error = await timeoutOf(client.wait(task.id, { timeoutMs: 60_000 }));
    // A minute of the client's clock passed in the sleeps, and next to no real time.
    expect(clock.slept.reduce((a, b) => a + b, 0)).toBe(60_000);
    expect(performance.now() - startedAt).toBeLessThan(1000);
    expect(error.message).toContain(`next run in ${task.run_at_ms - clock.now()}ms`);
  });

  it("a wait by key for a key with no task yet sleeps on the client's clock", async () => {
    const clock = movedBySleeps(0);
    const client = new CairnQ(new MemoryStore(), { clock });
    await timeoutOf(client.waitByKey("nothing-yet", { timeoutMs: 1000, pollMs: 100 }));
    expect(clock.slept).toEqual([100, 150, 225, 337, 188]);
  });
});
