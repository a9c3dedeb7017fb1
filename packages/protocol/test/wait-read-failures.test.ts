/**
 * The §7 wait loop when a read fails: an error that is not a `CairnQError`
 * (a connection lost mid-statement, a refused connect) is transient, so the
 * loop sleeps its interval and reads again until its deadline; a
 * `CairnQError` ends the wait at once.
 */
import { describe, expect, it } from "vitest";
import { CairnQError, InvalidArgument } from "../src/errors.js";
import type { TaskStore } from "../src/store.js";
import { describeTimeout, waitForTask } from "../src/wait.js";
import { ID, NOW, queuedRow, runningRow, terminalRow } from "./fixtures.js";
import { fakeStore, timeoutOf } from "./wait-fake-store.js";

type ReadMethod = "getStatus" | "getStatusByKey" | "get" | "getByKey";

/** Makes `store[method]` throw `error` on its calls numbered in `failing` (1-based), else read as before. */
function failOn(store: TaskStore, method: ReadMethod, failing: readonly number[], error: unknown = lost()): { calls: () => number } {
  const read = (store[method] as (arg: string) => Promise<unknown>).bind(store);
  let calls = 0;
  (store as unknown as Record<ReadMethod, (arg: string) => Promise<unknown>>)[method] = async (arg: string) => {
    calls += 1;
    if (failing.includes(calls)) throw error;
    return read(arg);
  };
  return { calls: () => calls };
}

/** What a Postgres store throws when its connection is terminated mid-statement: a plain Error. */
function lost(): Error {
  const error = new Error("the connection to Postgres ended while a statement was in flight (Connection terminated unexpectedly)");
  error.name = "PostgresConnectionLost";
  return error;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("a read that fails with an error that is not a CairnQError", () => {
  it("a status probe: the wait sleeps its interval on the wake and probes again, then returns the terminal row", async () => {
    const f = fakeStore([queuedRow()]);
    f.state.onBeat = (poll) => {
      if (poll === 2) f.table.set(ID, terminalRow("succeeded", { result: 7 }));
    };
    const probes = failOn(f.store, "getStatus", [1, 2]);
    const done = await waitForTask(f.store, { id: ID }, { pollMs: 10 }, f.deps);
    expect(done).toMatchObject({ status: "succeeded", result: 7 });
    expect(probes.calls()).toBe(4);
    expect(f.wakes()).toEqual([
      [ID, 10],
      [ID, 15],
      [ID, 22],
    ]);
  });

  it("the full read of a terminal task: read again after a sleep on the task's wake", async () => {
    const f = fakeStore([terminalRow("failed")]);
    const reads = failOn(f.store, "get", [1]);
    expect((await waitForTask(f.store, { id: ID }, { pollMs: 10 }, f.deps)).status).toBe("failed");
    expect(reads.calls()).toBe(2);
    expect(f.wakes()).toEqual([[ID, 10]]);
  });

  it("the full read after a done signal: the next beat probes and reads", async () => {
    const f = fakeStore([runningRow()]);
    let listener: ((s: { reason: "done"; taskId: string }) => void) | null = null;
    Object.assign(f.store, {
      subscribe: (fn: typeof listener) => {
        listener = fn;
        return () => {};
      },
    });
    f.store.taskDoneWake = async (_id, ms) => {
      f.clock.ms += ms;
      f.table.set(ID, terminalRow("succeeded"));
      listener?.({ reason: "done", taskId: ID });
    };
    const reads = failOn(f.store, "get", [1]);
    expect((await waitForTask(f.store, { id: ID }, { pollMs: 10 }, f.deps)).status).toBe("succeeded");
    // Probe (running), wake + signal, full read fails, wake + signal, full read.
    expect([f.count("getStatus"), reads.calls()]).toEqual([1, 2]);
  });

  it("by key, while the key resolves to nothing: the plain sleep, then the key is followed", async () => {
    const f = fakeStore([queuedRow()]);
    failOn(f.store, "getStatusByKey", [1, 2]);
    f.state.onBeat = (poll) => {
      if (poll === 1) {
        f.keyed.set("order-7", ID);
        f.table.set(ID, terminalRow("succeeded"));
      }
    };
    const done = await waitForTask(f.store, { key: "order-7" }, { pollMs: 10 }, f.deps);
    expect(done.status).toBe("succeeded");
    expect(f.sleeps).toEqual([10, 15]);
    expect(f.wakes()).toEqual([]);
  });

  it("at the deadline: TaskTimeout with the task id, no row, the error as cause and a message saying the read failed", async () => {
    const f = fakeStore([queuedRow()]);
    const error = lost();
    const probes = failOn(f.store, "getStatus", range(1, 100), error);
    const timeout = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 50, pollMs: 10, maxPollMs: 20 }, f.deps));
    expect(timeout).toMatchObject({ taskId: ID, key: null, task: null });
    expect(timeout.cause).toBe(error);
    expect(probes.calls()).toBe(5); // at 0, 10, 25, 45 and 50 ms: bounded by maxPollMs and the deadline
    expect(f.wakes().map(([, ms]) => ms)).toEqual([10, 15, 20, 5]);
    expect(timeout.message).toBe(
      `task ${ID} did not finish within 50ms as far as this wait could tell: at the deadline reading it failed (${error.message}). ` +
        "The wait reads again after such a failure until its deadline, and the task itself is unaffected: " +
        "check that the database is reachable, then wait for it again",
    );
  });

  it("at the deadline after a good probe: the message names the status read before the row read failed", async () => {
    const f = fakeStore([runningRow()]);
    failOn(f.store, "get", [1], "socket hang up");
    const timeout = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 0 }, f.deps));
    expect(timeout).toMatchObject({ taskId: ID, task: null, cause: "socket hang up" });
    expect(timeout.message).toMatch(/^task \S+ did not finish within 0ms as far as this wait could tell: at the deadline its status read 'running', then reading its row failed \("socket hang up"\)\./);
  });

  it("by key at the deadline: the last task the key resolved to names the TaskTimeout", async () => {
    const f = fakeStore([queuedRow()], { "order-7": ID });
    failOn(f.store, "getStatusByKey", range(2, 100));
    const timeout = await timeoutOf(waitForTask(f.store, { key: "order-7" }, { timeoutMs: 30, pollMs: 10 }, f.deps));
    expect(timeout).toMatchObject({ taskId: ID, key: "order-7", task: null });
    expect(timeout.message).toMatch(/^the task with key 'order-7' did not finish within 30ms as far as this wait could tell: at the deadline reading it failed/);
  });

  it("an earlier failure, then a good read at the deadline: the usual TaskTimeout, with that failure as cause", async () => {
    const f = fakeStore([queuedRow({ name: "summarize" })]);
    const error = lost();
    failOn(f.store, "getStatus", [1], error);
    const timeout = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 30, pollMs: 10 }, f.deps));
    expect(timeout).toMatchObject({ taskId: ID, task: { status: "queued" } });
    expect(timeout.cause).toBe(error);
    expect(timeout.message).toMatch(/did not finish within 30ms: queued and never claimed/);
  });
});

describe("a read that fails with a CairnQError", () => {
  it.each([
    ["a closed store", new CairnQError("this postgres store is closed, so the call was not run", { fatal: true })],
    ["a refused argument", new InvalidArgument("id", "bad id")],
  ])("ends the wait at once with that very error: %s", async (_what, error) => {
    const f = fakeStore([queuedRow()]);
    const probes = failOn(f.store, "getStatus", [1], error);
    await expect(waitForTask(f.store, { id: ID }, {}, f.deps)).rejects.toBe(error);
    expect([probes.calls(), f.count("taskDoneWake")]).toEqual([1, 0]);
  });
});

describe("the signal while reads fail", () => {
  it("a signal aborted during the failing read ends the wait with its reason, without a retry", async () => {
    const f = fakeStore([queuedRow()]);
    const controller = new AbortController();
    const reason = new Error("user left");
    f.store.getStatus = async () => {
      controller.abort(reason);
      throw lost();
    };
    await expect(waitForTask(f.store, { id: ID }, { signal: controller.signal }, f.deps)).rejects.toBe(reason);
    expect(f.count("taskDoneWake")).toBe(0);
  });

  it("a signal aborted during the sleep after a failed read ends the wait with its reason", async () => {
    const f = fakeStore([queuedRow()]);
    const controller = new AbortController();
    failOn(f.store, "getStatus", range(1, 100));
    f.store.taskDoneWake = async (_id, _ms, signal) => {
      expect(signal).toBe(controller.signal);
      controller.abort(new Error("stop"));
    };
    await expect(waitForTask(f.store, { id: ID }, { signal: controller.signal }, f.deps)).rejects.toThrow("stop");
  });
});

describe("describeTimeout with a failed read", () => {
  it("names the task by id, by key (with the task the probe found), or '?' when nothing names it", () => {
    const base = { id: ID, key: null, task: null, timeoutMs: 5, nowMs: NOW } as const;
    const error = new Error("ECONNREFUSED");
    expect(describeTimeout({ ...base, readFailure: { error, status: null } })).toMatch(new RegExp(`^task ${ID} did not finish within 5ms as far`));
    expect(describeTimeout({ ...base, id: null, key: "k", readFailure: { error, status: { id: ID, status: "queued" } } })).toMatch(
      new RegExp(`^the task with key 'k' \\(task ${ID}\\) did not finish .*its status read 'queued', then reading its row failed \\(ECONNREFUSED\\)`),
    );
    expect(describeTimeout({ ...base, id: null, readFailure: { error, status: null } })).toMatch(/^task \? did not finish/);
    // A row read at the deadline wins over a failure noted for it: the row says where the task is.
    expect(describeTimeout({ ...base, task: queuedRow(), readFailure: { error, status: null } })).toMatch(/queued and never claimed/);
    expect(describeTimeout({ ...base, readFailure: null })).toMatch(/was not found within 5ms/);
  });
});
