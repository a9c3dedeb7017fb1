/**
 * The store's lifecycle and backend hooks: connect/close, declared
 * capabilities, wake sleeps, push signals (capability `pushWakeups`) and
 * `completeIn` (capability `transactionalComplete`).
 */
import type { RefCompleteTaskStore, ScheduleTaskStore, StoreSignal, TaskStepStore, TransactionalTaskStore } from "@cairnq/protocol";
import { CairnQError, isFatalError, LostLease } from "@cairnq/protocol";
import type { ConformanceCase } from "../case.js";

/** How long a push signal may take to arrive (a LISTEN connection starts in the background, §9). */
const SIGNAL_WAIT_MS = 5000;

function waitFor(signals: StoreSignal[], match: (s: StoreSignal) => boolean, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const started = Date.now();
    const poll = (): void => {
      if (signals.some(match)) return resolve(true);
      if (Date.now() - started >= timeoutMs) return resolve(false);
      setTimeout(poll, 10);
    };
    poll();
  });
}

export const lifecycleCases: readonly ConformanceCase[] = [
  {
    id: "connect-lazy-and-idempotent",
    title: "every method connects lazily; connect and close are idempotent; after close a call rejects with a fatal error",
    spec: "store.ts connect()/close(), design: TaskStore contract",
    async run(t) {
      const task = await t.submit("before-connect");
      await t.store.connect();
      await t.store.connect();
      t.fields(await t.get(task.id), { status: "queued" });
      await t.store.close();
      await t.store.close();
      // Fatal (`isFatalError`), so a worker whose store was closed under it stops instead of retrying for ever.
      const calls: [string, () => Promise<unknown>][] = [
        ["submit", () => t.submit("after-close")],
        ["get", () => t.store.get(task.id)],
        ["claim", () => t.claim(t.w1, { limit: 1 })],
      ];
      for (const [what, call] of calls) {
        const err = await t.rejects(call(), CairnQError, `${what} after close()`);
        t.expect(isFatalError(err)).toBe(true);
      }
    },
  },
  {
    id: "capabilities-declared",
    title: "the store's capabilities are booleans and match what the suite was told (so skips are honest)",
    spec: "store.ts StoreCapabilities",
    run(t) {
      const actual = t.store.capabilities;
      // flowControl, schedules, completeRef, claimReprobe, claimWakeOnQueued, taskDoneWakeReads and groups are optional in the type (stores written before them compile); absent = false.
      const shape = {
        pushWakeups: actual.pushWakeups,
        transactionalComplete: actual.transactionalComplete,
        databaseClock: actual.databaseClock,
        flowControl: actual.flowControl ?? false,
        schedules: actual.schedules ?? false,
        completeRef: actual.completeRef ?? false,
        claimReprobe: actual.claimReprobe ?? false,
        claimWakeOnQueued: actual.claimWakeOnQueued ?? false,
        taskDoneWakeReads: actual.taskDoneWakeReads ?? false,
        durableSteps: actual.durableSteps ?? false,
        queueHealth: actual.queueHealth ?? false,
        groups: actual.groups ?? false,
      };
      for (const value of Object.values(shape)) t.expect(typeof value).toBe("boolean");
      t.expect(shape).toEqual({ flowControl: false, schedules: false, completeRef: false, claimReprobe: false, claimWakeOnQueued: false, taskDoneWakeReads: false, durableSteps: false, queueHealth: false, groups: false, ...t.capabilities });
      t.expect(typeof (t.store.inner as Partial<TransactionalTaskStore>).completeIn === "function").toBe(shape.transactionalComplete);
      t.expect(typeof (t.store.inner as Partial<TransactionalTaskStore>).withTransaction === "function").toBe(shape.transactionalComplete);
      t.expect(typeof (t.store.inner as Partial<ScheduleTaskStore>).submitScheduleSlots === "function").toBe(shape.schedules);
      t.expect(typeof (t.store.inner as Partial<RefCompleteTaskStore>).completeRef === "function").toBe(shape.completeRef);
      t.expect(typeof (t.store.inner as Partial<TaskStepStore>).parkStep === "function").toBe(shape.durableSteps);
      return Promise.resolve();
    },
  },
  {
    id: "wake-sleeps-resolve",
    title: "claimWake and taskDoneWake resolve by their timeout, and promptly when their signal aborts",
    spec: "§9, store.ts claimWake/taskDoneWake",
    async run(t) {
      const task = await t.submit("job");
      let started = Date.now();
      await t.store.claimWake(["default"], 30);
      await t.store.taskDoneWake(task.id, 30);
      t.expect(Date.now() - started).toBeLessThan(2000);
      const controller = new AbortController();
      started = Date.now();
      setTimeout(() => controller.abort(), 20);
      const waits = Promise.allSettled([t.store.claimWake(["nothing-will-come"], 10_000, controller.signal), t.store.taskDoneWake(task.id, 10_000, controller.signal)]);
      // Race a deadline so a store that ignores the signal fails here, by name, not by the runner's timeout.
      const settled = await Promise.race([waits.then(() => true), t.sleep(2000).then(() => false)]);
      t.expect({ settledAfterAbort: settled }).toEqual({ settledAfterAbort: true });
      t.expect(Date.now() - started).toBeLessThan(2000);
    },
  },
  {
    id: "subscribe-without-push-is-silent",
    title: "a store without push wakeups returns an unsubscribe function and never calls the listener",
    spec: "store.ts subscribe(), §9",
    skipUnless: (caps) => (caps.pushWakeups ? "the store declares pushWakeups; push-signals covers it" : null),
    async run(t) {
      const signals: StoreSignal[] = [];
      const unsubscribe = t.store.subscribe((s) => signals.push(s));
      t.expect(typeof unsubscribe).toBe("function");
      const task = await t.submitAndClaim(t.w1);
      await t.store.complete({ taskId: task.id, workerId: t.w1, result: null });
      await t.sleep(20);
      unsubscribe();
      unsubscribe();
      t.expect(signals).toEqual([]);
    },
  },
  {
    id: "push-signals",
    title: "a push store signals 'queued' with the queue on submit and 'done' with the task id on settlement; unsubscribe stops delivery",
    spec: "§3.8, §9",
    skipUnless: (caps) => (caps.pushWakeups ? null : "the store declares capabilities.pushWakeups = false (no push channel, §9)"),
    async run(t) {
      await t.store.connect();
      const signals: StoreSignal[] = [];
      const unsubscribe = t.store.subscribe((s) => signals.push(s));
      try {
        // The listener starts in the background (§9), so keep submitting until one signal lands.
        const started = Date.now();
        let heard = false;
        while (!heard && Date.now() - started < SIGNAL_WAIT_MS) {
          await t.submit("push", { queue: "push-q" });
          heard = await waitFor(signals, (s) => s.reason === "queued" && s.queue === "push-q", 250);
        }
        t.expect(heard).toBe(true);
        const task = await t.claimOne(t.w1, { queues: ["push-q"] });
        await t.store.complete({ taskId: task.id, workerId: t.w1, result: null });
        t.expect(await waitFor(signals, (s) => s.reason === "done" && s.taskId === task.id, SIGNAL_WAIT_MS)).toBe(true);
      } finally {
        unsubscribe();
      }
      const count = signals.length;
      await t.submit("push", { queue: "push-q" });
      await t.sleep(200);
      t.expect(signals).toHaveLength(count);
    },
  },
  {
    id: "complete-in",
    title: "completeIn runs the caller's function and completes with it; a non-owner gets LostLease; a throwing function leaves the task running",
    spec: "§5.15 complete_in",
    skipUnless: (caps) => (caps.transactionalComplete ? null : "the store declares capabilities.transactionalComplete = false (no completeIn, §5.15)"),
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const failure = new Error("handler write failed");
      const thrown = await t.rejectsAny(
        t.store.completeIn({ taskId: task.id, workerId: t.w1 }, () => Promise.reject(failure)),
        "completeIn whose function throws",
      );
      t.expect(thrown).toBe(failure);
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1 });
      await t.rejects(t.store.completeIn({ taskId: task.id, workerId: t.w2 }, () => Promise.resolve({ n: 1 })), LostLease, "completeIn by a non-owner");
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1 });
      const out = await t.store.completeIn({ taskId: task.id, workerId: t.w1 }, () => Promise.resolve({ n: 2 }));
      t.expect(out.result).toEqual({ n: 2 });
      t.fields(out.task, { status: "succeeded", result: { n: 2 }, progress: 1 });
    },
  },
];
