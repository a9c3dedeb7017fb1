import { describe, expect, it } from "vitest";
import { InvalidArgument, TaskTimeout } from "../src/errors.js";
import type { StepRecord } from "../src/steps.js";
import { PARK_FOREVER_AT_MS } from "../src/steps.js";
import type { TaskStore } from "../src/store.js";
import type { Task } from "../src/task.js";
import {
  DEFAULT_MAX_POLL_MS,
  DEFAULT_POLL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  describeTimeout,
  nextPollInterval,
  resolveWaitOptions,
  WAIT_DEFAULTS,
  waitForTask,
} from "../src/wait.js";
import { ID, NOW, queuedRow, runningRow, terminalRow } from "./fixtures.js";
import { fakeStore, timeoutOf } from "./wait-fake-store.js";

describe("defaults and interval growth (§7)", () => {
  it("are 30000 / 100 / 500", () => {
    expect([DEFAULT_WAIT_TIMEOUT_MS, DEFAULT_POLL_MS, DEFAULT_MAX_POLL_MS]).toEqual([30_000, 100, 500]);
    expect(WAIT_DEFAULTS).toEqual({ timeoutMs: 30_000, pollMs: 100, maxPollMs: 500 });
    expect(Object.isFrozen(WAIT_DEFAULTS)).toBe(true);
  });

  it("grows by half, at least by one, up to the maximum", () => {
    const after = (current: number) => nextPollInterval(current, 500);
    expect([100, 150, 225, 337, 500].map(after)).toEqual([150, 225, 337, 500, 500]);
    expect([1, 2, 3].map(after)).toEqual([2, 3, 4]);
    expect(nextPollInterval(9, 10)).toBe(10);
  });
});

describe("resolveWaitOptions", () => {
  it("applies the defaults; maxPollMs follows a larger pollMs", () => {
    expect(resolveWaitOptions({})).toEqual({ timeoutMs: 30_000, pollMs: 100, maxPollMs: 500, signal: undefined });
    expect(resolveWaitOptions({ pollMs: 800 })).toMatchObject({ pollMs: 800, maxPollMs: 800 });
    const signal = new AbortController().signal;
    expect(resolveWaitOptions({ timeoutMs: 0, pollMs: 5, maxPollMs: 5, signal })).toEqual({ timeoutMs: 0, pollMs: 5, maxPollMs: 5, signal });
  });

  it.each([
    [{ timeoutMs: -1 }, "timeoutMs", /timeoutMs must be an integer ≥ 0 \(milliseconds\), got -1/],
    [{ timeoutMs: 1.5 }, "timeoutMs", /got 1.5/],
    [{ pollMs: 0 }, "pollMs", /pollMs must be an integer ≥ 1/],
    [{ maxPollMs: "5" }, "maxPollMs", /got "5"/],
    [{ pollMs: {} }, "pollMs", /got an object/],
    [{ pollMs: 100, maxPollMs: 50 }, "maxPollMs", /maxPollMs \(50\) must be at least pollMs \(100\)/],
    [{ signal: {} }, "signal", /signal must be an AbortSignal/],
  ])("rejects %o", (options, argument, message) => {
    let error: unknown;
    try {
      resolveWaitOptions(options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
    expect((error as Error).message).toMatch(message);
  });

  it("names the caller's timeout option", () => {
    expect(() => resolveWaitOptions({ timeoutMs: -5 }, "waitTimeoutMs")).toThrow(/waitTimeoutMs must be an integer/);
  });
});

describe("waitForTask by id", () => {
  it("probes every poll, sleeps on taskDoneWake with the growing interval, reads the row only once terminal", async () => {
    const f = fakeStore([queuedRow()]);
    f.state.onBeat = (poll) => {
      if (poll === 7) f.table.set(ID, terminalRow("succeeded", { result: { ok: true } }));
    };
    const done = await waitForTask(f.store, { id: ID }, {}, f.deps);
    expect(done).toMatchObject({ status: "succeeded", result: { ok: true } });
    expect(f.wakes()).toEqual([
      [ID, 100],
      [ID, 150],
      [ID, 225],
      [ID, 337],
      [ID, 500],
      [ID, 500],
    ]);
    expect([f.count("getStatus"), f.count("get")]).toEqual([7, 1]);
    expect(f.sleeps).toEqual([]);
  });

  it("returns an already terminal task after one probe and one read, without sleeping", async () => {
    const f = fakeStore([terminalRow("canceled")]);
    expect((await waitForTask(f.store, { id: ID }, {}, f.deps)).status).toBe("canceled");
    expect([f.count("getStatus"), f.count("get"), f.count("taskDoneWake")]).toEqual([1, 1, 0]);
  });

  it("keeps polling when the full read finds the task purged or live again", async () => {
    const f = fakeStore([terminalRow("failed")]);
    const get = f.store.get.bind(f.store);
    let reads = 0;
    f.store.get = async (id: string) => {
      reads += 1;
      if (reads === 1) return null; // purged between probe and read
      if (reads === 2) return queuedRow(); // retried between probe and read
      return get(id);
    };
    expect((await waitForTask(f.store, { id: ID }, { pollMs: 10 }, f.deps)).status).toBe("failed");
    expect(reads).toBe(3);
    expect(f.wakes()).toEqual([
      [ID, 10],
      [ID, 15],
    ]);
  });

  it("never sleeps past the deadline, and rounds a fractional remainder up", async () => {
    const f = fakeStore([queuedRow()]);
    f.clock.ms = 0.25;
    const error = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 60, pollMs: 40 }, f.deps));
    expect(f.wakes()).toEqual([
      [ID, 40],
      [ID, 20],
    ]);
    expect(error.task?.id).toBe(ID);
  });

  it("times out carrying the id, no key, the row read on the timeout beat and where it was stuck", async () => {
    const f = fakeStore([queuedRow({ name: "summarize", queue: "llm" })]);
    const error = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 30, pollMs: 5 }, f.deps));
    expect(error).toMatchObject({ taskId: ID, key: null, task: { id: ID, status: "queued" } });
    expect(error.message).toBe(
      `task ${ID} ('summarize') did not finish within 30ms: queued and never claimed — ` +
        `is a worker running with a handler for 'summarize' on queue 'llm' against this database? ` +
        `If one is, it is busy or held back by a limit it sets on 'summarize' (globalConcurrency, rateLimit), which this message does not check (explain tells a full rate window)`,
    );
  });

  it("wakes on the awaited id while no row has it, and times out with no row", async () => {
    const f = fakeStore();
    const error = await timeoutOf(waitForTask(f.store, { id: "task_missing" }, { timeoutMs: 20, pollMs: 10 }, f.deps));
    expect(f.wakes()).toEqual([
      ["task_missing", 10],
      ["task_missing", 10],
    ]);
    expect(f.count("get")).toBe(0);
    expect(error).toMatchObject({ taskId: "task_missing", key: null, task: null });
    expect(error.message).toMatch(/^task task_missing was not found within 20ms/);
  });

  it("runs on the real clocks when none is injected", async () => {
    const f = fakeStore([queuedRow({ run_at_ms: Date.now() + 60_000 })]);
    const error = await timeoutOf(waitForTask(f.store, { id: ID }, { timeoutMs: 0 }));
    expect(error.message).toMatch(/: delayed, attempt 0\/3, next run in \d+ms$/);
    const dueInMs = Number(/next run in (\d+)ms/.exec(error.message)?.[1]);
    expect(dueInMs).toBeGreaterThan(50_000);
    expect(dueInMs).toBeLessThanOrEqual(60_000);
  });

  it("rejects an empty id and bad options before touching the store", async () => {
    const f = fakeStore();
    await expect(waitForTask(f.store, { id: "" })).rejects.toMatchObject({ name: "InvalidArgument", argument: "id" });
    await expect(waitForTask(f.store, { id: ID }, { pollMs: 0 })).rejects.toMatchObject({ argument: "pollMs" });
    expect(f.count("getStatus")).toBe(0);
  });
});

describe("waitForTask by key", () => {
  it("sleeps on deps.sleep while the key points at nothing, then follows the key to its task", async () => {
    const f = fakeStore();
    f.state.onBeat = (poll) => {
      if (poll === 3) {
        f.table.set(ID, queuedRow());
        f.keyed.set("order-7", ID);
      }
      if (poll === 4) f.table.set(ID, terminalRow("succeeded"));
    };
    const done = await waitForTask(f.store, { key: "order-7" }, { pollMs: 10 }, f.deps);
    expect(done.status).toBe("succeeded");
    expect(f.sleeps).toEqual([10, 15]);
    expect(f.wakes()).toEqual([[ID, 22]]);
    expect([f.count("getStatusByKey"), f.count("getByKey"), f.count("getStatus"), f.count("get")]).toEqual([4, 1, 0, 0]);
  });

  it("follows a replace: the wake moves to the task the key points at now", async () => {
    const first = queuedRow();
    const second = queuedRow({ id: "task_second" });
    const f = fakeStore([first, second], { k: first.id });
    f.state.onBeat = (poll) => {
      if (poll === 2) {
        f.table.set(first.id, terminalRow("canceled"));
        f.keyed.set("k", second.id);
      }
      if (poll === 3) f.table.set(second.id, terminalRow("succeeded", { id: second.id }));
    };
    const done = await waitForTask(f.store, { key: "k" }, { pollMs: 5 }, f.deps);
    expect(done.id).toBe(second.id);
    expect(f.wakes().map(([id]) => id)).toEqual([first.id, second.id]);
  });

  it("times out with the key as task id when the key never resolved", async () => {
    const f = fakeStore();
    const error = await timeoutOf(waitForTask(f.store, { key: "ghost" }, { timeoutMs: 10, pollMs: 2 }, f.deps));
    expect(error).toMatchObject({ taskId: "ghost", key: "ghost", task: null });
    expect(error.message).toMatch(/^no task with key 'ghost' was found within 10ms/);
  });

  it("times out with the resolved task id and the key", async () => {
    const f = fakeStore([queuedRow({ name: "job" })], { "order-7": ID });
    const error = await timeoutOf(waitForTask(f.store, { key: "order-7" }, { timeoutMs: 0 }, f.deps));
    expect(error).toMatchObject({ taskId: ID, key: "order-7" });
    expect(error.message).toContain(`task ${ID} ('job', key 'order-7') did not finish within 0ms`);
  });

  it("needs deps.sleep and a non-empty key", async () => {
    const f = fakeStore();
    await expect(waitForTask(f.store, { key: "k" })).rejects.toMatchObject({ name: "InvalidArgument", argument: "sleep" });
    await expect(waitForTask(f.store, { key: "" }, {}, f.deps)).rejects.toMatchObject({ argument: "key" });
  });
});

describe("waitForTask and its signal", () => {
  it("rejects at once with the reason of an aborted signal", async () => {
    const f = fakeStore([queuedRow()]);
    const reason = new Error("user left");
    await expect(waitForTask(f.store, { id: ID }, { signal: AbortSignal.abort(reason) }, f.deps)).rejects.toBe(reason);
    expect(f.count("getStatus")).toBe(0);
  });

  it("passes the signal to the wake and rejects when it aborted during the sleep", async () => {
    const f = fakeStore([queuedRow()]);
    const controller = new AbortController();
    f.store.taskDoneWake = async (_id, _ms, signal) => {
      expect(signal).toBe(controller.signal);
      controller.abort(new Error("stop"));
    };
    await expect(waitForTask(f.store, { id: ID }, { signal: controller.signal }, f.deps)).rejects.toThrow("stop");
  });

  it("passes the signal to the plain sleep of an unresolved key", async () => {
    const f = fakeStore();
    const controller = new AbortController();
    const sleep = async (_ms: number, signal?: AbortSignal) => {
      expect(signal).toBe(controller.signal);
      controller.abort();
    };
    await expect(waitForTask(f.store, { key: "k" }, { signal: controller.signal }, { ...f.deps, sleep })).rejects.toMatchObject({
      name: "AbortError",
    });
  });
});

describe("describeTimeout", () => {
  const base = { id: ID, key: null, timeoutMs: 5, nowMs: NOW } as const;

  it("names a task that is not found, by id or by key", () => {
    expect(describeTimeout({ ...base, task: null })).toMatch(new RegExp(`^task ${ID} was not found within 5ms: no row has that id`));
    expect(describeTimeout({ ...base, id: null, task: null })).toMatch(/^task \? was not found/);
    expect(describeTimeout({ ...base, id: null, key: "k", task: null })).toMatch(/^no task with key 'k' was found within 5ms/);
  });

  it("names a delayed first attempt and when it runs", () => {
    expect(describeTimeout({ ...base, task: queuedRow({ run_at_ms: NOW + 1500, max_attempts: 4 }) })).toBe(
      `task ${ID} ('summarize') did not finish within 5ms: delayed, attempt 0/4, next run in 1500ms`,
    );
  });

  it("names debounce beside the delay when the wait was by key (the row does not say which pushed it out)", () => {
    expect(describeTimeout({ ...base, key: "k", task: queuedRow({ run_at_ms: NOW + 200, max_attempts: 4 }) })).toBe(
      `task ${ID} ('summarize', key 'k') did not finish within 5ms: delayed (or debounced: a debounced submit under its key pushes it out), attempt 0/4, next run in 200ms`,
    );
  });

  it("names a retry, its last error when it has a message, and when it runs", () => {
    const retrying = (error: unknown) => queuedRow({ attempt: 1, run_at_ms: NOW + 10, error });
    expect(describeTimeout({ ...base, task: retrying({ message: "upstream 503" }) })).toMatch(
      /: retrying after attempt 1\/3 \(last error: upstream 503\), next run in 10ms$/,
    );
    expect(describeTimeout({ ...base, task: retrying({ code: 7 }) })).toMatch(/: retrying after attempt 1\/3, next run in 10ms$/);
    expect(describeTimeout({ ...base, task: retrying({ message: 7 }) })).toMatch(/: retrying after attempt 1\/3, next run in 10ms$/);
    expect(describeTimeout({ ...base, task: retrying(null) })).toMatch(/: retrying after attempt 1\/3, next run in 10ms$/);
    expect(describeTimeout({ ...base, task: retrying("boom") })).toMatch(/: retrying after attempt 1\/3, next run in 10ms$/);
  });

  it("names a due task never claimed, and one requeued but not re-claimed", () => {
    expect(describeTimeout({ ...base, task: queuedRow() })).toContain(
      ": queued and never claimed — is a worker running with a handler for 'summarize' on queue 'default' against this database?",
    );
    expect(describeTimeout({ ...base, key: "k", task: queuedRow({ attempt: 2, error: { message: "flaky" } }) })).toBe(
      `task ${ID} ('summarize', key 'k') did not finish within 5ms: queued again after attempt 2/3 (last error: flaky) and not yet re-claimed — ` +
        `are workers with a handler for 'summarize' on queue 'default' running and free (and not held back by a limit they set on it: globalConcurrency, rateLimit)?`,
    );
  });

  it("names a due task at its group's groupConcurrency, and a group's groupRateLimit among the limits it may be held back by", () => {
    const full = { group: "acme", running: 2, queued: 3, groupConcurrency: 2 };
    expect(describeTimeout({ ...base, task: queuedRow(), group: full })).toBe(
      `task ${ID} ('summarize') did not finish within 5ms: queued, waiting on its group's limit: group acme: 2 of 2 running ` +
        `(groupConcurrency of 'summarize'), 3 queued — it is claimed when one of them ends`,
    );
    expect(describeTimeout({ ...base, task: queuedRow({ attempt: 1, error: { message: "flaky" } }), group: full })).toContain(
      ": queued again after attempt 1/3 (last error: flaky), waiting on its group's limit: group acme: 2 of 2",
    );
    for (const room of [{ ...full, running: 1 }, { ...full, groupConcurrency: null }]) {
      expect(describeTimeout({ ...base, task: queuedRow(), group: room })).toContain(
        "held back by a limit it sets on 'summarize' (globalConcurrency, rateLimit, group acme's groupRateLimit), which this message does not check (explain tells a full rate window)",
      );
    }
  });

  it("names what a parked task waits for: a sleep, a message (with or without its timeout), a join", () => {
    const step = (fields: Partial<StepRecord>): StepRecord => ({
      name: "nap",
      kind: "sleep",
      status: "waiting",
      result: null,
      error: null,
      attempt: 1,
      atMs: NOW,
      wakeAtMs: NOW + 60_000,
      waitingFor: null,
      seq: 1,
      ...fields,
    });
    const parked = (fields: Partial<StepRecord>) => describeTimeout({ ...base, task: queuedRow({ run_at_ms: NOW + 60_000 }), parked: step(fields) });
    const tail = " — no worker holds it meanwhile, and a worker resumes it when that ends";
    expect(parked({})).toBe(`task ${ID} ('summarize') did not finish within 5ms: parked, sleeping in step 'nap', waking in 60000ms${tail}`);
    expect(parked({ wakeAtMs: null })).toContain(": parked, sleeping in step 'nap' — ");
    expect(parked({ kind: "wait", name: "go", waitingFor: "go", wakeAtMs: PARK_FOREVER_AT_MS })).toContain(": parked, waiting for a message 'go', with no timeout — ");
    expect(parked({ kind: "wait", name: "go", waitingFor: "go", wakeAtMs: NOW - 5 })).toContain(": parked, waiting for a message 'go', or its timeout in 0ms — ");
    expect(parked({ kind: "join", name: "j", waitingFor: ["task_a"] })).toContain(": parked, joining 1 child task (step 'j') — ");
    expect(parked({ kind: "join", name: "j", waitingFor: ["task_a", "task_b"] })).toContain(": parked, joining 2 child tasks (step 'j') — ");
    expect(parked({ kind: "join", name: "j", waitingFor: null })).toContain(": parked, joining 0 child tasks (step 'j') — ");
    expect(parked({ kind: "step", name: "s" })).toContain(": parked, waiting in step 's' — ");
    // Its message has arrived (the entry stays waiting until a worker resumes it): due, never "waiting for a message".
    const go = step({ kind: "wait", name: "go", waitingFor: "go", wakeAtMs: PARK_FOREVER_AT_MS });
    const arrived = describeTimeout({ ...base, task: queuedRow(), parked: go, messageArrived: true });
    expect(arrived).toContain(
      ": parked on wait 'go', and its message 'go' has arrived: it is due and waits for a worker to resume it (no need to send it again) — " +
        "is a worker running with a handler for 'summarize' on queue 'default' against this database?",
    );
    expect(arrived).not.toContain("waiting for a message");
    expect(describeTimeout({ ...base, task: queuedRow(), parked: go, messageArrived: false })).toContain(": parked, waiting for a message 'go', with no timeout — ");
    expect(describeTimeout({ ...base, task: queuedRow(), parked: step({ kind: "join", name: "j", waitingFor: ["task_a"] }), messageArrived: true })).toContain(": parked, joining 1 child task");
  });

  it("names a running task: cancel requested, or its worker and progress", () => {
    expect(describeTimeout({ ...base, task: runningRow({ cancel_requested_at_ms: NOW }) })).toContain(
      ": running attempt 1/3 with a cancel requested — waiting for the handler to see the cancel",
    );
    const running = runningRow({ progress: 0.4, message: "page 2" });
    expect(describeTimeout({ ...base, task: running })).toContain(
      `: running attempt 1/3 on ${running.worker_id ?? ""}, progress 0.4 ("page 2") — the handler is still working`,
    );
    expect(describeTimeout({ ...base, task: runningRow({ worker_id: null, progress: null, message: null }) })).toContain(
      ": running attempt 1/3 on a worker — the handler is still working",
    );
  });

  it.each(["succeeded", "failed", "canceled"] as const)("names a row that turned %s only after the deadline", (status) => {
    expect(describeTimeout({ ...base, task: terminalRow(status) })).toContain(`: ${status}, but the row was read only after the deadline`);
  });
});

describe("waitForTask's evidence for a queued task at the deadline", () => {
  const waiting: StepRecord = { name: "nap", kind: "sleep", status: "waiting", result: null, error: null, attempt: 1, atMs: NOW, wakeAtMs: NOW + 900, waitingFor: null, seq: 2 };
  const done: StepRecord = { ...waiting, name: "fetch", kind: "step", status: "done", wakeAtMs: null, seq: 1 };

  function evidenceStore(row: Task, reads: { steps?: () => Promise<StepRecord[]>; taskGroup?: () => Promise<unknown>; hasMessage?: () => Promise<boolean> }) {
    const f = fakeStore([row]);
    const store = Object.assign(f.store, {
      capabilities: { durableSteps: reads.steps !== undefined, groups: reads.taskGroup !== undefined },
      ...reads,
      groupStats: async () => [],
    }) as unknown as TaskStore;
    return { f, store };
  }

  it("a store with durable steps: the step the task is parked on (its latest waiting entry)", async () => {
    const older = { ...waiting, name: "first", seq: 0 };
    const { f, store } = evidenceStore(queuedRow({ run_at_ms: NOW + 900 }), { steps: async () => [older, done, waiting] });
    const error = await timeoutOf(waitForTask(store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, f.deps));
    expect(error.message).toContain(": parked, sleeping in step 'nap', waking in 900ms — no worker holds it meanwhile");
  });

  it("parked on a wait: whether its message has arrived (hasMessage); a failed or missing read leaves that out", async () => {
    const go = { ...waiting, name: "go", kind: "wait" as const, waitingFor: "go", wakeAtMs: PARK_FOREVER_AT_MS };
    const message = async (hasMessage?: () => Promise<boolean>): Promise<string> => {
      const { f, store } = evidenceStore(queuedRow(), { steps: async () => [go], ...(hasMessage === undefined ? {} : { hasMessage }) });
      return (await timeoutOf(waitForTask(store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, f.deps))).message;
    };
    expect(await message(async () => true)).toContain(": parked on wait 'go', and its message 'go' has arrived: it is due and waits for a worker to resume it");
    const still = ": parked, waiting for a message 'go', with no timeout — no worker holds it meanwhile";
    expect(await message(async () => false)).toContain(still);
    expect(await message(() => Promise.reject(new Error("connection reset")))).toContain(still);
    expect(await message()).toContain(still);
  });

  it("not parked and due: its group's counts from a store with group reads", async () => {
    const group = { group: "acme", running: 1, queued: 1, groupConcurrency: 1 };
    const { f, store } = evidenceStore(queuedRow(), { steps: async () => [done], taskGroup: async () => group });
    const error = await timeoutOf(waitForTask(store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, f.deps));
    expect(error.message).toContain(": queued, waiting on its group's limit: group acme: 1 of 1 running (groupConcurrency of 'summarize'), 1 queued");
  });

  it("due after its sleep ended, attempt 0: the journal shows a worker ran it, so never 'never claimed'", async () => {
    const slept = { ...waiting, status: "done" as const };
    const { f, store } = evidenceStore(queuedRow(), { steps: async () => [done, slept] });
    const error = await timeoutOf(waitForTask(store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, f.deps));
    expect(error.message).toContain(
      ": queued to be resumed after it parked (a worker ran it: its journal holds 2 entries; a park gives its attempt back), due and not yet resumed — " +
        "is a worker running with a handler for 'summarize' on queue 'default' against this database?",
    );
    expect(error.message).not.toContain("never claimed");
    expect(describeTimeout({ id: ID, key: null, timeoutMs: 5, nowMs: NOW, task: queuedRow(), journalEntries: 1 })).toContain("its journal holds 1 entry;");
    // An empty journal says nothing against "never claimed".
    const empty = evidenceStore(queuedRow(), { steps: async () => [] });
    expect((await timeoutOf(waitForTask(empty.store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, empty.f.deps))).message).toContain(": queued and never claimed — ");
  });

  it("a delayed task's group is not read; a read that fails leaves the evidence out and the wait still times out", async () => {
    let groupReads = 0;
    const delayed = evidenceStore(queuedRow({ run_at_ms: NOW + 900 }), { taskGroup: async () => (groupReads += 1) });
    expect((await timeoutOf(waitForTask(delayed.store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, delayed.f.deps))).message).toContain(": delayed, attempt 0/3");
    expect(groupReads).toBe(0);
    const failing = evidenceStore(queuedRow(), { steps: () => Promise.reject(new Error("connection reset")) });
    expect((await timeoutOf(waitForTask(failing.store, { id: ID }, { timeoutMs: 10, pollMs: 5 }, failing.f.deps))).message).toContain(": queued and never claimed — ");
  });
});

describe("waitForTask after a push done signal (§9)", () => {
  it("reads the full row at once: no status probe between the signal and the return", async () => {
    const f = fakeStore([queuedRow()]);
    let listener: ((signal: { reason: "done"; taskId: string }) => void) | null = null;
    let unsubscribed = false;
    const store = Object.assign(f.store, {
      subscribe(l: (signal: { reason: "done"; taskId: string }) => void) {
        listener = l;
        return () => {
          unsubscribed = true;
        };
      },
      async taskDoneWake(_id: string, ms: number) {
        f.clock.ms += ms / 2;
        f.table.set(ID, terminalRow("succeeded"));
        listener?.({ reason: "done", taskId: "some-other-task" });
        listener?.({ reason: "done", taskId: ID });
      },
    });
    const row = await waitForTask(store, { id: ID }, {}, f.deps);
    expect(row.status).toBe("succeeded");
    expect(f.count("getStatus")).toBe(1);
    expect(f.count("get")).toBe(1);
    expect(unsubscribed).toBe(true);
  });

  it("keeps waiting when the row read after a signal is not terminal (the read decides, not the signal)", async () => {
    const f = fakeStore([queuedRow()]);
    let listener: ((signal: { reason: "done"; taskId: string }) => void) | null = null;
    let wakes = 0;
    const store = Object.assign(f.store, {
      subscribe(l: (signal: { reason: "done"; taskId: string }) => void) {
        listener = l;
        return () => {};
      },
      async taskDoneWake(_id: string, ms: number) {
        f.clock.ms += ms;
        wakes += 1;
        if (wakes === 1) listener?.({ reason: "done", taskId: ID });
        if (wakes === 2) f.table.set(ID, terminalRow("failed"));
      },
    });
    const row = await waitForTask(store, { id: ID }, {}, f.deps);
    expect(row.status).toBe("failed");
    expect(wakes).toBe(2);
  });
  it("a signal heard during the status read is not slept through: the next beat reads the full row at once", async () => {
    const f = fakeStore([queuedRow()]);
    let listener: ((signal: { reason: "done"; taskId: string }) => void) | null = null;
    const probe = f.store.getStatus.bind(f.store);
    const store = Object.assign(f.store, {
      subscribe(l: (signal: { reason: "done"; taskId: string }) => void) {
        listener = l;
        return () => {};
      },
      async getStatus(id: string) {
        const ref = await probe(id);
        // The task settles while this probe's answer (still queued) is on its way back.
        f.table.set(ID, terminalRow("succeeded"));
        listener?.({ reason: "done", taskId: ID });
        return ref;
      },
    });
    const row = await waitForTask(store, { id: ID }, {}, f.deps);
    expect(row.status).toBe("succeeded");
    expect(f.wakes()).toEqual([]);
    expect(f.count("get")).toBe(1);
  });

  it("a task gone (purged) when the signal's full read runs is not finished: the wait goes on, by id, until the deadline", async () => {
    const f = fakeStore([queuedRow()]);
    let listener: ((signal: { reason: "done"; taskId: string }) => void) | null = null;
    const woken: string[] = [];
    const store = Object.assign(f.store, {
      subscribe(l: (signal: { reason: "done"; taskId: string }) => void) {
        listener = l;
        return () => {};
      },
      async taskDoneWake(id: string, ms: number) {
        woken.push(id);
        f.clock.ms += ms;
        if (woken.length === 1) {
          f.table.delete(ID);
          listener?.({ reason: "done", taskId: ID });
        }
      },
    });
    const err = await waitForTask(store, { id: ID }, { timeoutMs: 1_000 }, f.deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskTimeout);
    expect((err as TaskTimeout).taskId).toBe(ID);
    expect((err as TaskTimeout).task).toBe(null);
    // After the missing full read, it kept sleeping on the awaited id itself.
    expect(woken.length).toBeGreaterThan(1);
    expect(new Set(woken)).toEqual(new Set([ID]));
  });
});

describe("waitForTask on a wake that read the task (TaskStore.taskDoneWake resolving with a row)", () => {
  it("returns the terminal row the wake read: no probe and no full read after it", async () => {
    const f = fakeStore([queuedRow()]);
    const done = terminalRow("succeeded");
    const store = Object.assign(f.store, {
      async taskDoneWake(_id: string, ms: number) {
        f.clock.ms += ms / 2;
        return done;
      },
    });
    const row = await waitForTask(store, { id: ID, known: { id: ID, status: "queued" } }, {}, f.deps);
    expect(row).toBe(done);
    expect([f.count("getStatus"), f.count("get")]).toEqual([0, 0]);
  });

  it("reads again when the wake's row is not terminal or not the awaited task's", async () => {
    const f = fakeStore([queuedRow()]);
    let wakes = 0;
    const store = Object.assign(f.store, {
      async taskDoneWake(_id: string, ms: number) {
        f.clock.ms += ms;
        wakes += 1;
        if (wakes === 1) return runningRow();
        if (wakes === 2) return { ...terminalRow("succeeded"), id: "task_other" };
        f.table.set(ID, terminalRow("failed"));
        return undefined;
      },
    });
    const row = await waitForTask(store, { id: ID }, {}, f.deps);
    expect(row.status).toBe("failed");
    expect(wakes).toBe(3);
    expect(f.count("get")).toBe(1);
  });

  it("a wait by key ignores the wake's row and re-resolves its key (a replace moves it)", async () => {
    const f = fakeStore([queuedRow()], { k: ID });
    const store = Object.assign(f.store, {
      async taskDoneWake(_id: string, ms: number) {
        f.clock.ms += ms;
        f.table.set(ID, terminalRow("succeeded"));
        return terminalRow("succeeded");
      },
    });
    const row = await waitForTask(store, { key: "k" }, {}, f.deps);
    expect(row.status).toBe("succeeded");
    expect([f.count("getStatusByKey"), f.count("getByKey")]).toEqual([2, 1]);
  });
});

describe("waitForTask with a known status (call's submitted row)", () => {
  it("takes a non-terminal known status as the first probe's answer: it sleeps first, then polls as usual", async () => {
    const f = fakeStore([queuedRow()]);
    f.state.onBeat = () => f.table.set(ID, terminalRow("succeeded"));
    const row = await waitForTask(f.store, { id: ID, known: { id: ID, status: "queued" } }, {}, f.deps);
    expect(row.status).toBe("succeeded");
    // One probe fewer than a plain wait: the first beat slept on the known status.
    expect(f.count("getStatus")).toBe(1);
    expect(f.wakes()).toEqual([[ID, DEFAULT_POLL_MS]]);
    expect(f.count("get")).toBe(1);
  });

  it("a terminal known status goes straight to the full read (the row decides)", async () => {
    const f = fakeStore([terminalRow("canceled")]);
    const row = await waitForTask(f.store, { id: ID, known: { id: ID, status: "canceled" } }, {}, f.deps);
    expect(row.status).toBe("canceled");
    expect(f.count("getStatus")).toBe(0);
    expect(f.wakes()).toEqual([]);
  });

  it("a known status of another id is ignored: the first beat probes", async () => {
    const f = fakeStore([terminalRow("succeeded")]);
    const row = await waitForTask(f.store, { id: ID, known: { id: "task_other", status: "queued" } }, {}, f.deps);
    expect(row.status).toBe("succeeded");
    expect(f.count("getStatus")).toBe(1);
    expect(f.wakes()).toEqual([]);
  });

  it("times out on the first beat with a zero timeout, reading the row as a probe would have", async () => {
    const f = fakeStore([queuedRow()]);
    const err = await waitForTask(f.store, { id: ID, known: { id: ID, status: "queued" } }, { timeoutMs: 0 }, f.deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskTimeout);
    expect((err as TaskTimeout).task?.status).toBe("queued");
    expect(f.count("getStatus")).toBe(0);
  });
});
