/**
 * After a claim whose `reprobe` found nothing left, a worker that hears push
 * `queued` signals — or whose store's claim wait ends on commits that queue a
 * task (`claimWakeOnQueued`, SQLite) — waits for one (or for the poll
 * interval) instead of opening another claim transaction right after its task.
 */
import { describe, expect, it } from "vitest";
import type { ClaimInput, StoreSignal, SubmitInput, Task } from "@cairnq/protocol";
import { delay, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import type { SpyStore } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

/**
 * A MemoryStore that pushes signals as Postgres does (§9): a submit through it is heard as `queued`
 * by subscribers and ends a `claimWake` of its queue; `silentSubmit` inserts without a signal (as a
 * task falling due does). Every call is recorded (see {@link spyStore}).
 */
function pushStore(): SpyStore & { silentSubmit(input: SubmitInput): Promise<Task> } {
  const inner = new MemoryStore();
  const listeners = new Set<(signal: StoreSignal) => void>();
  const wakers = new Set<{ queues: readonly string[]; wake: () => void }>();
  const spy = spyStore(inner, {
    capabilities: { ...inner.capabilities, pushWakeups: true },
    subscribe(listener: (signal: StoreSignal) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal) {
      return new Promise<void>((resolve) => {
        const waker = {
          queues,
          wake: () => {
            clearTimeout(timer);
            wakers.delete(waker);
            signal?.removeEventListener("abort", waker.wake);
            resolve();
          },
        };
        const timer = setTimeout(waker.wake, timeoutMs);
        signal?.addEventListener("abort", waker.wake);
        wakers.add(waker);
      });
    },
    async submit(input: SubmitInput) {
      const task = await inner.submit(input);
      for (const listener of listeners) listener({ reason: "queued", queue: task.queue });
      for (const waker of [...wakers]) if (waker.queues.includes(task.queue)) waker.wake();
      return task;
    },
  });
  return { ...spy, silentSubmit: (input) => inner.submit(input) };
}

/**
 * A MemoryStore whose claim wait ends as SQLite's does (`claimWakeOnQueued`), with no push signals: a
 * submit through it ends a `claimWake` of its queue, and one made while nobody waited ends the next
 * `claimWake` at once (SQLite looks at the commits since the last wait). `silentSubmit` inserts without
 * either (as a task falling due does).
 */
function commitWakeStore(): SpyStore & { silentSubmit(input: SubmitInput): Promise<Task> } {
  const inner = new MemoryStore();
  const wakers = new Set<{ queues: readonly string[]; wake: () => void }>();
  const unseen = new Set<string>();
  const spy = spyStore(inner, {
    capabilities: { ...inner.capabilities, pushWakeups: false, claimWakeOnQueued: true },
    claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal) {
      if (queues.some((queue) => unseen.has(queue))) {
        unseen.clear();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const waker = {
          queues,
          wake: () => {
            clearTimeout(timer);
            wakers.delete(waker);
            signal?.removeEventListener("abort", waker.wake);
            resolve();
          },
        };
        const timer = setTimeout(waker.wake, timeoutMs);
        signal?.addEventListener("abort", waker.wake);
        wakers.add(waker);
      });
    },
    async submit(input: SubmitInput) {
      const task = await inner.submit(input);
      const waiting = [...wakers].filter((waker) => waker.queues.includes(task.queue));
      if (waiting.length === 0) unseen.add(task.queue);
      for (const waker of waiting) waker.wake();
      return task;
    },
  });
  return { ...spy, silentSubmit: (input) => inner.submit(input) };
}

const reprobes = (spy: SpyStore): (ClaimInput["reprobe"] | undefined)[] => spy.callsOf("claim").map((call) => (call.args[0] as ClaimInput).reprobe);

/** A worker at concurrency 1 with a no-op handler for "a" on a push store, after it ran one task submitted with a signal. */
async function afterOneTask(pollIntervalMs: number): Promise<{ spy: ReturnType<typeof pushStore>; worker: ReturnType<typeof makeWorker> }> {
  const spy = pushStore();
  const worker = makeWorker(spy.store, { concurrency: 1, pollIntervalMs });
  worker.task("a", () => undefined);
  const first = await spy.store.submit({ name: "a" });
  void worker.run();
  await waitForStatus(spy.inner, first.id, ["succeeded"]);
  return { spy, worker };
}

describe("a worker whose last claim left nothing", () => {
  it("waits for a queued signal instead of claiming again after its task, then claims at once when one comes", async () => {
    const { spy, worker } = await afterOneTask(60_000);
    await delay(80);
    // One claim only: its reprobe said nothing was left, so no claim transaction follows the task.
    expect(spy.callsOf("claim")).toHaveLength(1);
    expect(typeof reprobes(spy)[0]).toBe("function");
    const second = await spy.store.submit({ name: "a" });
    await waitForStatus(spy.inner, second.id, ["succeeded"], 1000);
    expect(spy.callsOf("claim")).toHaveLength(2);
    await worker.stop();
  });

  it("claims again at once while the reprobe says more is left, and asks for none while draws come back full (a backlog never waits for signals)", async () => {
    const spy = pushStore();
    const worker = makeWorker(spy.store, { concurrency: 1, pollIntervalMs: 60_000 });
    worker.task("a", () => undefined);
    const tasks = [];
    for (let i = 0; i < 4; i++) tasks.push(await spy.inner.submit({ name: "a" }));
    void worker.run();
    for (const task of tasks) await waitForStatus(spy.inner, task.id, ["succeeded"], 1000);
    await delay(50);
    // The first claim asks (it says more is left); the rest of the full streak does not, and the empty claim that
    // ends it sends the worker to wait: five claims for four tasks, as before reprobe existed.
    expect(reprobes(spy).map((reprobe) => typeof reprobe)).toEqual(["function", "undefined", "undefined", "undefined", "undefined"]);
    await worker.stop();
  });

  it("claims again once the poll interval since that claim has passed, for work no signal announces", async () => {
    const { spy, worker } = await afterOneTask(150);
    const claimedAtMs = (spy.callsOf("claim")[0] as { atMs: number }).atMs;
    const silent = await spy.silentSubmit({ name: "a" });
    await waitForStatus(spy.inner, silent.id, ["succeeded"], 2000);
    const next = spy.callsOf("claim")[1] as { atMs: number };
    expect(next.atMs - claimedAtMs).toBeGreaterThanOrEqual(140);
    await worker.stop();
  });

  it("a queued signal that arrives while the task runs ends the wait before it starts", async () => {
    const spy = pushStore();
    const worker = makeWorker(spy.store, { concurrency: 1, pollIntervalMs: 60_000 });
    let second: Task | null = null;
    worker.task("a", async (ctx) => {
      if (second === null) second = await ctx.submit("a");
    });
    const first = await spy.store.submit({ name: "a" });
    void worker.run();
    await waitForStatus(spy.inner, first.id, ["succeeded"]);
    await waitFor(() => second !== null);
    await waitForStatus(spy.inner, (second as unknown as Task).id, ["succeeded"], 1000);
    await worker.stop();
  });

  it("without push signals the worker asks for no reprobe and claims as before", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 1 });
    worker.task("a", () => undefined);
    const task = await spy.store.submit({ name: "a" });
    void worker.run();
    await waitForStatus(spy.inner, task.id, ["succeeded"]);
    await waitFor(() => spy.callsOf("claim").length >= 3);
    await worker.stop();
    expect(reprobes(spy).every((reprobe) => reprobe === undefined)).toBe(true);
  });

  it("on a store whose claim wait ends on commits (no push signals), waits in it after the task, and a submit made meanwhile still ends the wait", async () => {
    const spy = commitWakeStore();
    const worker = makeWorker(spy.store, { concurrency: 1, pollIntervalMs: 60_000 });
    let second: Task | null = null;
    worker.task("a", async (ctx) => {
      // Submitted while the task runs, before the worker waits: the wait must see it at once.
      if (ctx.payload === "first") second = await spy.store.submit({ name: "a", payload: "second" });
    });
    const first = await spy.store.submit({ name: "a", payload: "first" });
    void worker.run();
    await waitForStatus(spy.inner, first.id, ["succeeded"]);
    await waitFor(() => second !== null);
    await waitForStatus(spy.inner, (second as unknown as Task).id, ["succeeded"], 1000);
    await delay(80);
    // One claim per task, each asking for the reprobe: none opened right after a task to find nothing.
    expect(reprobes(spy).map((reprobe) => typeof reprobe)).toEqual(["function", "function"]);
    const third = await spy.store.submit({ name: "a" });
    await waitForStatus(spy.inner, third.id, ["succeeded"], 1000);
    expect(spy.callsOf("claim")).toHaveLength(3);
    await worker.stop();
  });
});

describe("a worker whose claim a limit left empty while its settlements are in flight", () => {
  it("claims again once they commit (they free what the limit counted) instead of idling a poll interval", async () => {
    const spy = pushStore();
    const worker = makeWorker(spy.store, { concurrency: 2, pollIntervalMs: 60_000 });
    worker.task("a", () => undefined);
    const first = await spy.inner.submit({ name: "a" });
    let second: Task | null = null;
    // The first task's complete waits for the gate.
    let completing = false;
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const settle = async (_args: unknown[], next: () => Promise<unknown>): Promise<unknown> => {
      completing = true;
      await gate;
      return next();
    };
    spy.hooks.complete = settle;
    let claims = 0;
    spy.hooks.claim = async (args, next) => {
      claims += 1;
      const input = args[0] as ClaimInput;
      if (claims === 1) {
        // Takes the first task; a second is queued meanwhile, so the claim's reprobe finds work left.
        const rows = await next();
        second = await spy.inner.submit({ name: "a" });
        input.reprobe?.(true);
        return rows;
      }
      if (claims === 2) {
        // Nothing it may take while the first task's settlement is in flight (as when that task holds its group's
        // slot until its complete commits); the reprobe says work is left.
        await waitFor(() => completing, 3000, "the first settlement");
        // The store plans the draw (so the worker knows what it asked for), takes nothing, and reprobes.
        expect(input.draws?.([], 0)?.limit).toBeGreaterThan(0);
        input.reprobe?.(true);
        return [];
      }
      return next();
    };
    void worker.run();
    await waitFor(() => claims >= 2, 3000, "the limited claim");
    await delay(50);
    // Waiting for the settlement: neither claiming in a loop nor claiming again before it.
    expect(claims).toBe(2);
    expect((await spy.inner.get(first.id))?.status).toBe("running");
    open();
    await waitForStatus(spy.inner, (second as unknown as Task).id, ["succeeded"], 1000);
    expect(claims).toBe(3);
    await worker.stop();
  });
});
