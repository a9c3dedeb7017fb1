/**
 * `explain`: the paragraph as a pure function of a row and a clock
 * (`explainTask`, every state and its wording), then `cairnq.explain(id)`
 * reading real rows — moved there by a worker's claims, heartbeats and
 * settlements — on a store with a fixed clock, and on a SQLite file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { TASK_ROW_NOW, taskRow } from "@cairnq/test-support/task-rows";
import { afterEach, describe, expect, it } from "vitest";
import { explainTask } from "../src/explain.js";
import { CairnQ } from "../src/index.js";
import { MemoryStore } from "./support.js";

const NOW = TASK_ROW_NOW;

function row(fields: Partial<Task>): Task {
  return taskRow({ root_id: "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", ...fields });
}

const ENVELOPE = { type: "TaskError", code: "upstream", message: "503", retryable: true, details: {} };

describe("explainTask", () => {
  it("queued and not due: delayed, or backing off after a failed attempt", () => {
    expect(explainTask(row({ run_at_ms: NOW + 300_000 }), { nowMs: NOW })).toMatchObject({
      state: "delayed",
      atMs: NOW + 300_000,
      summary: expect.stringContaining("Not due until 2026-12-01T10:05:00.000Z (in 5 min)"),
    });
    const backingOff = explainTask(row({ run_at_ms: NOW + 2000, attempt: 2, error: ENVELOPE }), { nowMs: NOW });
    expect(backingOff.state).toBe("backing-off");
    expect(backingOff.summary).toContain("Backing off after attempt 2 of 3 failed");
    expect(backingOff.summary).toContain("for attempt 3");
    expect(backingOff.summary).toContain('TaskError upstream: "503" (retryable)');
  });

  it("queued and due: unclaimed when nothing claims the queue recently, waiting when workers are busy", () => {
    const none = { runningOnQueue: 0, runningWithName: 0, lastFinishedAtMs: null, queuedOnQueue: 1 };
    expect(explainTask(row({}), { nowMs: NOW, activity: none })).toMatchObject({
      state: "unclaimed",
      summary: expect.stringContaining("Is a worker running with a handler for 'email' on queue 'mail' against this database?"),
    });
    const stale = { ...none, lastFinishedAtMs: NOW - 600_000 };
    expect(explainTask(row({}), { nowMs: NOW, activity: stale }).summary).toContain("the last one finished 2026-12-01T09:50:00.000Z (10 min ago)");
    const busy = { runningOnQueue: 3, runningWithName: 1, lastFinishedAtMs: NOW - 1000, queuedOnQueue: 40 };
    const waiting = explainTask(row({ priority: 2 }), { nowMs: NOW, activity: busy });
    expect(waiting.state).toBe("waiting");
    expect(waiting.summary).toContain("3 tasks of the queue are running now (1 named 'email')");
    expect(waiting.summary).toContain("40 tasks are queued in it, claimed by priority (this one has 2)");
    const recent = explainTask(row({}), { nowMs: NOW, activity: { ...none, lastFinishedAtMs: NOW - 60_000 } });
    expect(recent.state).toBe("waiting");
    expect(explainTask(row({}), { nowMs: NOW }).state).toBe("waiting");
  });

  it("waiting: with its name running, the workers are busy or at a limit they set on it; with none running, a rateLimit window or a missing handler; never a limit as the cause", () => {
    const unrecorded = "the database records what runs and the rate windows claims counted, not every limit a worker sets, so it cannot tell";
    const busy = { runningOnQueue: 3, runningWithName: 2, lastFinishedAtMs: NOW - 1000, queuedOnQueue: 4 };
    const running = explainTask(row({}), { nowMs: NOW, activity: busy }).summary;
    expect(running).toContain(
      "2 named 'email' are running, so a worker has a handler for it: the workers may be busy, or at a limit they set on 'email' " +
        `(globalConcurrency, rateLimit), and it is claimed when that lets it; ${unrecorded} which.`,
    );
    expect(running).not.toContain("If no worker has a handler");
    expect(explainTask(row({}), { nowMs: NOW, activity: { ...busy, runningWithName: 1 } }).summary).toContain("1 named 'email' is running");
    const idle = { ...busy, runningWithName: 0 };
    expect(explainTask(row({}), { nowMs: NOW, activity: idle }).summary).toContain(
      "None named 'email' is running: a worker that limits 'email' by rateLimit may be at that limit until its window frees " +
        `(claims count in it even after they end); ${unrecorded} whether it is. If no worker has a handler for 'email', it stays queued; check the workers' task names.`,
    );
    const group = { group: "acme", running: 0, queued: 2, groupConcurrency: null };
    expect(explainTask(row({}), { nowMs: NOW, activity: idle, group }).summary).toContain("by rateLimit (or group acme's groupRateLimit) may be at that limit");
    expect(explainTask(row({}), { nowMs: NOW, activity: busy, group }).summary).toContain("(globalConcurrency, rateLimit, or group acme's groupRateLimit)");
  });

  it("waiting: a rate limit whose recorded window has room is not named as a possible cause", () => {
    const busy = { runningOnQueue: 3, runningWithName: 2, lastFinishedAtMs: NOW - 1000, queuedOnQueue: 4 };
    const idle = { ...busy, runningWithName: 0 };
    const room = { limit: { max: 5, perMs: 1000 }, claims: 2, roomAtMs: null, readAtMs: NOW };
    const group = { group: "acme", running: 0, queued: 2, groupConcurrency: null };
    // Both windows recorded, both with room: only globalConcurrency (not recorded) is left while some run.
    expect(explainTask(row({}), { nowMs: NOW, activity: busy, group, rateWindows: { name: room, group: room } }).summary).toContain("at a limit they set on 'email' (globalConcurrency), and it is claimed");
    const none = explainTask(row({}), { nowMs: NOW, activity: idle, group, rateWindows: { name: room, group: room } }).summary;
    expect(none).toContain("None named 'email' is running, and the rate windows its claims recorded have room. If no worker has a handler for 'email', it stays queued");
    expect(none).not.toContain("may be at that limit");
    // Only the group's window recorded: the name's rateLimit is still a possibility, the group's is not.
    const nameOnly = explainTask(row({}), { nowMs: NOW, activity: idle, group, rateWindows: { name: null, group: room } }).summary;
    expect(nameOnly).toContain("a worker that limits 'email' by rateLimit may be at that limit");
    expect(nameOnly).not.toContain("groupRateLimit");
    // Only the name's window recorded: the group's groupRateLimit is the one left.
    const groupOnly = explainTask(row({}), { nowMs: NOW, activity: idle, group, rateWindows: { name: room, group: null } }).summary;
    expect(groupOnly).toContain("a worker that limits 'email' by group acme's groupRateLimit may be at that limit");
  });

  it("running: under its worker, cancel requested, or lease expired awaiting recovery", () => {
    const running = row({ status: "running", attempt: 1, worker_id: "worker_A", lease_until_ms: NOW + 20_000, progress: 0.25, message: "step 2" });
    expect(explainTask(running, { nowMs: NOW })).toMatchObject({
      state: "running",
      atMs: NOW + 20_000,
      summary: expect.stringContaining('Running under worker worker_A (attempt 1 of 3); its lease is held until 2026-12-01T10:00:20.000Z (in 20 s)'),
    });
    expect(explainTask(running, { nowMs: NOW }).summary).toContain('Last progress: 25% "step 2".');
    const flagged = explainTask({ ...running, cancel_requested_at_ms: NOW - 2000 }, { nowMs: NOW });
    expect(flagged.state).toBe("cancel-requested");
    expect(flagged.summary).toContain("Cancel requested 2026-12-01T09:59:58.000Z (2 s ago)");
    const expired = explainTask({ ...running, lease_until_ms: NOW - 1000 }, { nowMs: NOW });
    expect(expired.state).toBe("lease-expired");
    expect(expired.summary).toContain("goes back to the queue for attempt 2");
    expect(explainTask({ ...running, attempt: 3, lease_until_ms: NOW - 1 }, { nowMs: NOW }).summary).toContain("ends failed with lease_expired");
    expect(explainTask({ ...running, lease_until_ms: NOW - 1, cancel_requested_at_ms: NOW - 5 }, { nowMs: NOW }).summary).toContain("ends canceled");
  });

  it("finished: succeeded, failed with its envelope, canceled and how", () => {
    const done = { worker_id: "worker_A", attempt: 1, completed_at_ms: NOW - 60_000 };
    expect(explainTask(row({ ...done, status: "succeeded", created_at_ms: NOW - 90_000 }), { nowMs: NOW }).summary).toBe(
      "Finished: succeeded 2026-12-01T09:59:00.000Z (1 min ago) on attempt 1 of 3 under worker worker_A, 30 s after it was submitted.",
    );
    const failed = explainTask(row({ ...done, status: "failed", attempt: 3, error: { ...ENVELOPE, retryable: false } }), { nowMs: NOW });
    expect(failed.summary).toContain('with no attempts left: TaskError upstream: "503" (not retryable)');
    expect(explainTask(row({ ...done, status: "failed", error: null }), { nowMs: NOW }).summary).toContain("by a non-retryable failure: no error envelope");
    expect(explainTask(row({ status: "canceled", completed_at_ms: NOW }), { nowMs: NOW }).summary).toContain("while queued, before any worker claimed it");
    expect(explainTask(row({ ...done, status: "canceled", cancel_requested_at_ms: NOW - 61_000 }), { nowMs: NOW }).summary).toContain("while running under worker worker_A");
    expect(explainTask(row({ ...done, status: "canceled", error: ENVELOPE }), { nowMs: NOW }).summary).toContain("while queued between attempts");
  });
});

describe("cairnq.explain", () => {
  let now = NOW;
  const clock = (): number => now;
  const WORKER = newWorkerId();

  // The rows carry this store's clock; explain is told the same clock (its default is the process's Date.now()).
  function open(): CairnQ {
    now = NOW;
    return new CairnQ(new MemoryStore({ clock }));
  }

  async function claim(store: TaskStore, queue: string, leaseMs = 30_000): Promise<Task> {
    const [task] = await store.claim({ queues: [queue], workerId: WORKER, leaseMs });
    if (task === undefined) throw new Error(`nothing claimable on queue '${queue}'`);
    return task;
  }

  it("a task queued and never claimed, with nothing claiming its queue: unclaimed, asking whether a worker runs", async () => {
    const cairnq = open();
    const task = await cairnq.submit("email", { to: "a@example.com" }, { queue: "mail" });
    now += 120_000;
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toEqual({
      taskId: task.id,
      state: "unclaimed",
      atMs: NOW,
      summary:
        "Queued in queue 'mail' and due since 2026-12-01T10:00:00.000Z (2 min ago), waiting for a worker with a handler for 'email' to claim it. " +
        "Nothing has claimed queue 'mail' recently: no task of it is running under a live lease and no finished task of that queue was found. " +
        "Is a worker running with a handler for 'email' on queue 'mail' against this database?",
      activity: { runningOnQueue: 0, runningWithName: 0, lastFinishedAtMs: null, queuedOnQueue: 1 },
      task,
      steps: [],
    });
  });

  it("a task parked on a durable wait: parked, naming the message and its timeout, with the journal", async () => {
    const cairnq = open();
    const task = await cairnq.submit("order", {}, { queue: "mail" });
    const workerId = newWorkerId();
    const [claimed] = await cairnq.store.claim({ queues: ["mail"], workerId, leaseMs: 30_000 });
    const store = cairnq.store as TaskStepStore;
    const owned = { taskId: task.id, workerId, attempt: claimed?.attempt ?? 1 };
    await store.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: 42 });
    await store.parkStep({ ...owned, name: "approval", kind: "wait", seq: 2, message: "approval", delayMs: 3_600_000 });
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why?.state).toBe("parked");
    expect(why?.atMs).toBe(now + 3_600_000);
    expect(why?.summary).toBe(
      "Parked (no worker holds it, no attempt is used): waiting for a message 'approval' (cairnq.send(taskId, 'approval', payload)), " +
        "or its timeout 2026-12-01T11:00:00.000Z (in 1 h), after 1 recorded step.",
    );
    expect(why?.steps?.map((s) => [s.name, s.status])).toEqual([
      ["charge", "done"],
      ["approval", "waiting"],
    ]);
    await cairnq.send(task.id, "approval", "yes");
    expect((await cairnq.explain(task.id, { nowMs: now }))?.summary).toContain("It is due now");
  });

  it("a queued task while workers claim its queue: waiting, with what runs and what competes", async () => {
    const cairnq = open();
    await cairnq.submit("email", {}, { queue: "mail" });
    await claim(cairnq.store, "mail");
    const task = await cairnq.submit("email", {}, { queue: "mail", priority: 3 });
    await cairnq.submit("digest", {}, { queue: "mail" });
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why?.state).toBe("waiting");
    expect(why?.activity).toEqual({ runningOnQueue: 1, runningWithName: 1, lastFinishedAtMs: null, queuedOnQueue: 2 });
    expect(why?.summary).toContain("Workers are claiming the queue: 1 task of the queue is running now (1 named 'email'); 2 tasks are queued in it, claimed by priority (this one has 3)");
  });

  it("a delayed task: not due until its run time", async () => {
    const cairnq = open();
    const task = await cairnq.submit("report", {}, { queue: "nightly", runAtDelayMs: 3_600_000 });
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toMatchObject({ state: "delayed", atMs: NOW + 3_600_000 });
    expect(why?.summary).toBe(
      "Not due until 2026-12-01T11:00:00.000Z (in 1 h): it was submitted with a delay (or debounced: each debounced submit under its key pushes it out; or retried into one), and no worker claims it before then. " +
        "Then a worker on queue 'nightly' with a handler for 'report' can claim it.",
    );
  });

  it("a running task: under its worker until the lease ends, with its last progress; no queue reads", async () => {
    const cairnq = open();
    const task = await cairnq.submit("resize", {}, { queue: "jobs", maxAttempts: 2 });
    await claim(cairnq.store, "jobs");
    now += 1000;
    await cairnq.store.progress({ taskId: task.id, workerId: WORKER, progress: 0.4, message: "resizing" });
    now += 2000;
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toMatchObject({ state: "running", atMs: NOW + 30_000, activity: null, task: { id: task.id, status: "running", worker_id: WORKER } });
    expect(why?.summary).toBe(
      `Running under worker ${WORKER} (attempt 1 of 2); its lease is held until 2026-12-01T10:00:30.000Z (in 27 s) and renewed by heartbeats while the handler runs ` +
        '(last heard from 2 s ago). Last progress: 40% "resizing".',
    );
  });

  it("a running task whose lease has expired: awaiting recovery, and which way recovery takes it", async () => {
    const cairnq = open();
    const task = await cairnq.submit("resize", {}, { queue: "jobs", maxAttempts: 2 });
    await claim(cairnq.store, "jobs", 5000);
    const why = await cairnq.explain(task.id, { nowMs: NOW + 65_000 });
    expect(why).toMatchObject({ state: "lease-expired", atMs: NOW + 5000 });
    expect(why?.summary).toContain(`The lease of worker ${WORKER} expired 2026-12-01T10:00:05.000Z (1 min ago) (attempt 1 of 2)`);
    expect(why?.summary).toContain("it then goes back to the queue for attempt 2");
    // The same row read at the time the lease still held is running: the clock decides, not the read.
    expect((await cairnq.explain(task.id, { nowMs: NOW + 4999 }))?.state).toBe("running");
  });

  it("a running task asked to cancel: cancel requested, until the handler sees it", async () => {
    const cairnq = open();
    const task = await cairnq.submit("resize", {}, { queue: "jobs" });
    await claim(cairnq.store, "jobs");
    now += 4000;
    await cairnq.cancel(task.id);
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toMatchObject({ state: "cancel-requested", atMs: NOW + 4000 });
    expect(why?.summary).toContain("The handler learns it at its next heartbeat");
  });

  it("a failed attempt with retries left: backing off, with the error envelope", async () => {
    const cairnq = open();
    const task = await cairnq.submit("charge", {}, { queue: "billing", maxAttempts: 3 });
    await claim(cairnq.store, "billing");
    const error = { type: "TaskError", code: "upstream", message: "503 from upstream", retryable: true, details: {} };
    await cairnq.store.fail({ taskId: task.id, workerId: WORKER, error, retryable: true, delayMs: 10_000 });
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toMatchObject({ state: "backing-off", atMs: NOW + 10_000 });
    expect(why?.summary).toContain("Backing off after attempt 1 of 3 failed");
    expect(why?.summary).toContain('The last error was TaskError upstream: "503 from upstream" (retryable).');
  });

  it("a failed task: finished, why (no attempts left or a verdict), and its error", async () => {
    const cairnq = open();
    const task = await cairnq.submit("charge", {}, { queue: "billing", maxAttempts: 3 });
    await claim(cairnq.store, "billing");
    now += 1500;
    const error = { type: "TaskError", code: "card_declined", message: "card declined", retryable: false, details: { last4: "4242" } };
    await cairnq.store.fail({ taskId: task.id, workerId: WORKER, error, retryable: false, delayMs: 0 });
    now += 60_000;
    const why = await cairnq.explain(task.id, { nowMs: now });
    expect(why).toMatchObject({ state: "failed", atMs: NOW + 1500, activity: null, task: { status: "failed", error } });
    expect(why?.summary).toBe(
      `Finished: failed 2026-12-01T10:00:01.500Z (1 min ago) on attempt 1 of 3 under worker ${WORKER}, by a non-retryable failure: ` +
        'TaskError card_declined: "card declined" (not retryable). Retrying it requeues it for one more attempt.',
    );
  });

  it("succeeded and canceled tasks: finished, and how", async () => {
    const cairnq = open();
    const done = await cairnq.submit("add", { a: 1 }, { queue: "math" });
    await claim(cairnq.store, "math");
    now += 250;
    await cairnq.store.complete({ taskId: done.id, workerId: WORKER, result: 2 });
    const dropped = await cairnq.submit("add", { a: 2 }, { queue: "math" });
    await cairnq.cancel(dropped.id);
    expect(await cairnq.explain(done.id, { nowMs: now })).toMatchObject({
      state: "succeeded",
      summary: `Finished: succeeded 2026-12-01T10:00:00.250Z (just now) on attempt 1 of 3 under worker ${WORKER}, 250 ms after it was submitted.`,
    });
    expect((await cairnq.explain(dropped.id, { nowMs: now }))?.summary).toContain("canceled 2026-12-01T10:00:00.250Z (just now) while queued, before any worker claimed it");
  });

  it("null for an id with no task; refuses options it does not know and a clock that is not epoch ms", async () => {
    const cairnq = open();
    expect(await cairnq.explain("task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP")).toBeNull();
    await expect(cairnq.explain("task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", { now: NOW } as never)).rejects.toThrow(InvalidArgument);
    await expect(cairnq.explain("task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", { nowMs: Number.NaN })).rejects.toThrow(/nowMs/);
  });
});

describe("cairnq.explain on SQLite", () => {
  let dir: string | undefined;
  let cairnq: CairnQ | undefined;

  afterEach(async () => {
    await cairnq?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    cairnq = undefined;
    dir = undefined;
  });

  it("reads the queue's activity from the database: unclaimed, then waiting once a worker ran a task of the queue", async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-explain-"));
    cairnq = new CairnQ(new SQLiteStore(join(dir, "cairnq.db")));
    const first = await cairnq.submit("email", {}, { queue: "mail" });
    const second = await cairnq.submit("email", {}, { queue: "mail" });
    expect(await cairnq.explain(second.id)).toMatchObject({ state: "unclaimed", activity: { runningOnQueue: 0, lastFinishedAtMs: null, queuedOnQueue: 2 } });

    const workerId = newWorkerId();
    const [claimed] = await cairnq.store.claim({ queues: ["mail"], workerId, leaseMs: 30_000 });
    expect(claimed?.id).toBe(first.id);
    await cairnq.store.complete({ taskId: first.id, workerId, result: null });
    const finished = await cairnq.get(first.id);
    const why = await cairnq.explain(second.id);
    expect(why).toMatchObject({ state: "waiting", activity: { runningOnQueue: 0, lastFinishedAtMs: finished?.completed_at_ms, queuedOnQueue: 1 } });
    expect(why?.summary).toContain("Workers are claiming the queue: a task of the queue finished");
  });

  it("a task held back by a worker's flow control: its name's full rateLimit window as recorded; what runs of its name, and the limits that may hold it, named as possible", async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-explain-"));
    cairnq = new CairnQ(new SQLiteStore(join(dir, "cairnq.db")));
    const store = cairnq.store;
    const workerId = newWorkerId();
    // A worker's claims with rateLimit 1/hour for 'rl' and globalConcurrency 1 for 'gc': one of each is taken.
    const flowControl = { rl: { rateLimit: { max: 1, perMs: 3_600_000 } }, gc: { globalConcurrency: 1 } };
    const rl = [await cairnq.submit("rl", {}, { queue: "q" }), await cairnq.submit("rl", {}, { queue: "q" })];
    const gc = [await cairnq.submit("gc", {}, { queue: "q" }), await cairnq.submit("gc", {}, { queue: "q" })];
    const claim = () => store.claim({ queues: ["q"], workerId, leaseMs: 60_000, names: ["rl", "gc"], limit: 10, flowControl });
    const claimed = await claim();
    expect(claimed.map((t) => t.name).sort()).toEqual(["gc", "rl"]);
    const taken = new Set(claimed.map((t) => t.id));
    // Submitted in one millisecond, either of a pair may be drawn first: explain the one left queued.
    const left = (pair: { id: string }[]) => pair.find((t) => !taken.has(t.id))?.id as string;
    await store.complete({ taskId: claimed.find((t) => t.name === "rl")?.id as string, workerId, result: null });
    expect(await claim()).toEqual([]);

    const heldByRate = await cairnq.explain(left(rl));
    expect(heldByRate).toMatchObject({ state: "rate-limit", activity: { runningWithName: 0 } });
    // Room again an hour after the claim, less the few ms since, rounded up (never early): "1 h".
    expect(heldByRate?.summary).toMatch(/waiting on its name's rate limit: 'rl': 1 of 1 claims in the current 1 h window \(rateLimit of 'rl'\); the window has room again in (1 h|59 min \d+ s) \(at /);
    const heldByGlobal = await cairnq.explain(left(gc));
    expect(heldByGlobal).toMatchObject({ state: "waiting", activity: { runningWithName: 1 } });
    expect(heldByGlobal?.summary).toContain("1 named 'gc' is running, so a worker has a handler for it: the workers may be busy, or at a limit they set on 'gc' (globalConcurrency, rateLimit)");
    expect(heldByGlobal?.summary).not.toContain("If no worker has a handler");
  });
});
