/**
 * The worker's side of durable steps on the in-memory store with real (short)
 * time: what the handler sees at the JSON boundary, that a parked call stops
 * heartbeating and frees its slot, that a step running beside a park records
 * before the task parks, and the refusal on a store without the capability.
 */
import { afterEach, expect, it } from "vitest";
import type { StepRecord, TaskStepStore } from "@cairnq/protocol";
import { InvalidArgument, UnsupportedBackend } from "@cairnq/protocol";
import type { TaskContext } from "../src/index.js";
import { Worker } from "../src/index.js";
import { MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import type { Backend } from "./support/stores.js";
import { SQLITE } from "./support/stores.js";

const workers: Worker[] = [];
async function stopAll(): Promise<void> {
  for (const worker of workers.splice(0)) await worker.stop();
}
afterEach(stopAll);

const MEMORY: Backend = {
  label: "memory",
  open: () => {
    const store = new MemoryStore();
    return Promise.resolve({ store, close: () => Promise.resolve() });
  },
};

function start(worker: Worker): Worker {
  workers.push(worker);
  void worker.run();
  return worker;
}

it("a step's value goes through the JSON boundary: the first run and every replay see the same plain value", async () => {
  const store = new MemoryStore();
  const seen: unknown[] = [];
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  worker.task("dated", async (ctx) => {
    const value = await ctx.step("when", () => ({ at: new Date(Date.UTC(2030, 0, 1)), skip: undefined, n: 1 }));
    seen.push(value);
    if (ctx.attempt === 1) throw new Error("again");
    return value;
  });
  const task = await store.submit({ name: "dated" });
  const done = await waitForStatus(store, task.id, ["succeeded"], 5000);
  expect(seen).toEqual([
    { at: "2030-01-01T00:00:00.000Z", n: 1 },
    { at: "2030-01-01T00:00:00.000Z", n: 1 },
  ]);
  expect(done.result).toEqual({ at: "2030-01-01T00:00:00.000Z", n: 1 });
});

it("a parked call frees its slot and stops heartbeating; a step running beside the park records before the task parks", async () => {
  const spy = spyStore();
  const worker = start(new Worker(spy.store, { concurrency: 1, pollIntervalMs: 10, leaseMs: 1000, heartbeatIntervalMs: 20 }));
  let late: unknown = null;
  worker.task("parker", async (ctx) => {
    const slow = ctx.step("slow", () => new Promise((resolve) => setTimeout(() => resolve("late"), 100)));
    slow.then(
      (value: unknown) => (late = value),
      (err: unknown) => (late = err),
    );
    await ctx.sleep("nap", 60_000);
    return "never";
  });
  worker.task("other", () => "ran");
  const parker = await spy.store.submit({ name: "parker" });
  await waitFor(async () => (await spy.store.get(parker.id))?.status === "queued" && (await spy.inner.steps(parker.id)).length > 0, 3000, "parked");
  const other = await spy.store.submit({ name: "other" });
  expect((await waitForStatus(spy.store, other.id, ["succeeded"], 3000)).result).toBe("ran");
  expect(late).toBe("late");
  const journal: StepRecord[] = await spy.inner.steps(parker.id);
  expect(journal.map((s) => [s.name, s.kind, s.status]).sort()).toEqual([
    ["nap", "sleep", "waiting"],
    ["slow", "step", "done"],
  ]);
  const beatsAfterPark = spy.callsOf("heartbeatBatch").filter((call) => (call.args[0] as { taskIds: string[] }).taskIds.includes(parker.id)).length;
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(spy.callsOf("heartbeatBatch").filter((call) => (call.args[0] as { taskIds: string[] }).taskIds.includes(parker.id)).length).toBe(beatsAfterPark);
});

for (const backend of [MEMORY, SQLITE]) {
  it(`${backend.label}: a step beside a shorter sleep (Promise.all) runs its function once and the task succeeds on its one attempt`, async () => {
    const { store, close } = await backend.open();
    try {
      const worker = start(new Worker(store, { concurrency: 2, pollIntervalMs: 10, leaseMs: 30_000 }));
      let bodies = 0;
      worker.task("step-and-sleep", async (ctx) => {
        const [charged] = await Promise.all([
          ctx.step("charge", async () => {
            bodies += 1;
            await new Promise((resolve) => setTimeout(resolve, 200));
            return "charged";
          }),
          ctx.sleep("cool-off", 50),
        ]);
        return charged;
      });
      const task = await store.submit({ name: "step-and-sleep", maxAttempts: 1 });
      // Before the fix: the body ran twice and the task failed lease_expired 30 s later (its one attempt used up).
      const done = await waitForStatus(store, task.id, ["succeeded", "failed"], 10_000);
      expect({ status: done.status, result: done.result, bodies }).toEqual({ status: "succeeded", result: "charged", bodies: 1 });
      const journal = await (store as TaskStepStore).steps(task.id);
      expect(journal.map((s) => [s.name, s.kind, s.status === "failed" ? "failed" : "recorded"]).sort()).toEqual([
        ["charge", "step", "recorded"],
        ["cool-off", "sleep", "recorded"],
      ]);
    } finally {
      await stopAll();
      await close();
    }
  });

  it(`${backend.label}: a step begun in the turn after a step beside a sleep recorded still records before the park, and runs once`, async () => {
    const { store, close } = await backend.open();
    try {
      const worker = start(new Worker(store, { concurrency: 2, pollIntervalMs: 10, leaseMs: 30_000 }));
      let bodies = 0;
      worker.task("step-then-step", async (ctx) => {
        let second: Promise<string> | null = null;
        const first = ctx.step("first", () => "one");
        // Begun one event-loop turn after the first step settles: the park, which waited for the first step, must wait for it too.
        void first.then(() =>
          setImmediate(() => {
            second = ctx.step("second", async () => {
              bodies += 1;
              await new Promise((resolve) => setTimeout(resolve, 150));
              return "two";
            });
            second.catch(() => undefined);
          }),
        );
        await Promise.all([first, ctx.sleep("nap", 30)]);
        await new Promise((resolve) => setImmediate(resolve));
        return await (second as unknown as Promise<string>);
      });
      const task = await store.submit({ name: "step-then-step", maxAttempts: 1 });
      const done = await waitForStatus(store, task.id, ["succeeded", "failed"], 10_000);
      expect({ status: done.status, result: done.result, bodies }).toEqual({ status: "succeeded", result: "two", bodies: 1 });
    } finally {
      await stopAll();
      await close();
    }
  });
}

it("refuses steps with UnsupportedBackend on a store without durableSteps, failing the attempt", async () => {
  const inner = new MemoryStore();
  const spy = spyStore(inner, { capabilities: { ...inner.capabilities, durableSteps: false } });
  const worker = start(new Worker(spy.store, { pollIntervalMs: 10 }));
  let error: unknown = null;
  worker.task("stepper", async (ctx) => {
    try {
      return await ctx.step("a", () => 1);
    } catch (err) {
      error = err;
      throw err;
    }
  });
  const task = await spy.store.submit({ name: "stepper", maxAttempts: 1 });
  await waitForStatus(spy.store, task.id, ["failed"], 3000);
  expect(error).toBeInstanceOf(UnsupportedBackend);
  expect((error as Error).message).toMatch(/durable steps/);
});

it("a sleep already due when reached (sleep 0, sleepUntil in the past) is recorded done and the call goes on: four writes a round trip, no park, one claim", async () => {
  const spy = spyStore();
  let claimed = 0;
  spy.hooks.claim = async (_args, next) => {
    const rows = (await next()) as unknown[];
    claimed += rows.length;
    return rows;
  };
  const worker = start(new Worker(spy.store, { concurrency: 1, pollIntervalMs: 10 }));
  let runs = 0;
  worker.task("nap0", async (ctx) => {
    runs += 1;
    await ctx.sleep("z", 0);
    await ctx.sleepUntil("past", new Date(Date.now() - 1000));
    return "woke";
  });
  const task = await spy.store.submit({ name: "nap0" });
  expect((await waitForStatus(spy.store, task.id, ["succeeded"], 3000)).result).toBe("woke");
  // The writes of the round trip (a claim that took a row commits; an empty one does not): before, a due
  // sleep parked and was claimed again, 5 writes for one sleep (submit, claim, park, claim, complete).
  const count = (method: string): number => spy.calls.filter((call) => (call.method as string) === method).length;
  const settles = count("complete") + count("completeRef");
  expect({ claimed, parks: count("parkStep"), records: count("recordStep"), settles, runs }).toEqual({ claimed: 1, parks: 0, records: 2, settles: 1, runs: 1 });
  const journal = await spy.inner.steps(task.id);
  expect(journal.map((s) => [s.name, s.kind, s.status])).toEqual([
    ["z", "sleep", "done"],
    ["past", "sleep", "done"],
  ]);
});

it("two steps of one name at once fail the attempt with InvalidArgument, and the first one's late write is no lease loss", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  const lost: unknown[] = [];
  worker.on("lease:lost", (event) => lost.push(event));
  let late: unknown = null;
  worker.task("twice", async (ctx) => {
    // The first step outlives its attempt: the second of the same name fails the attempt at once.
    const slow = ctx.step("same", () => new Promise((resolve) => setTimeout(() => resolve(1), 100)));
    slow.catch((err: unknown) => (late = err));
    await Promise.all([slow, ctx.step("same", () => 2)]);
    return "never";
  });
  const task = await store.submit({ name: "twice", maxAttempts: 1 });
  const failed = await waitForStatus(store, task.id, ["failed"], 3000);
  expect(JSON.stringify(failed.error)).toMatch(/InvalidArgument/);
  await waitFor(() => late !== null, 3000, "the slow step to end");
  expect((late as Error).name).toBe("LostLease");
  expect(lost).toEqual([]);
});

it("a sleep whose name is a symbol fails the attempt with the step name's InvalidArgument, not a TypeError", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let thrown: unknown = null;
  worker.task("symbol-sleep", async (ctx) => {
    try {
      await ctx.sleep(Symbol("nap") as unknown as string, 10);
    } catch (err) {
      thrown = err;
      throw err;
    }
  });
  const task = await store.submit({ name: "symbol-sleep", maxAttempts: 1 });
  await waitForStatus(store, task.id, ["failed"], 3000);
  expect(thrown).toBeInstanceOf(InvalidArgument);
});

it("a step whose result cannot be stored as JSON fails the task for good (unserializable_result) after its function's one run", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let charges = 0;
  worker.task("step-bigint", async (ctx) => {
    await ctx.step("charge", () => {
      charges += 1;
      return { amount: 10n };
    });
    return "ok";
  });
  const task = await store.submit({ name: "step-bigint", maxAttempts: 5 });
  // Before the fix: a retryable handler_error, the charge run on each of the 5 attempts and never recorded.
  const failed = await waitForStatus(store, task.id, ["failed"], 5000);
  const error = failed.error as { code: string; retryable: boolean; message: string };
  expect({ attempt: failed.attempt, code: error.code, retryable: error.retryable, charges }).toEqual({ attempt: 1, code: "unserializable_result", retryable: false, charges: 1 });
  expect(error.message).toMatch(/step 'charge'.*cannot be stored as JSON/);
  expect((await store.steps(task.id)).map((s) => [s.name, s.status])).toEqual([["charge", "failed"]]);
});

it("a race of a wait and a sleep fails the task for good, naming both and pointing at waitFor's timeoutMs, instead of parking for ever", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  worker.task("race", async (ctx) => {
    const approved = await Promise.race([ctx.waitFor("approve"), ctx.sleep("deadline", 500).then(() => "timed out")]);
    return approved;
  });
  const task = await store.submit({ name: "race", maxAttempts: 3 });
  // Before the fix: parked on 'approve' for ever, the sleep never written.
  const failed = await waitForStatus(store, task.id, ["failed"], 5000);
  const error = failed.error as { code: string; retryable: boolean; message: string };
  expect({ attempt: failed.attempt, code: error.code, retryable: error.retryable }).toEqual({ attempt: 1, code: "concurrent_waits", retryable: false });
  expect(error.message).toMatch(/ctx\.sleep\('deadline'\) began while ctx\.waitFor\('approve'\)/);
  expect(error.message).toMatch(/timeoutMs/);
  expect(await store.steps(task.id)).toEqual([]);
});

it("a step method called inside a step's function fails the task for good (steps do not nest) rather than replay another step's record", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let inner = 0;
  worker.task("nested", async (ctx) => {
    const outer = await ctx.step("outer", async () => {
      const config = await ctx.step("load", () => {
        inner += 1;
        return "inner-config";
      });
      return `outer saw ${config}`;
    });
    const top = await ctx.step("load", () => "top-level-user");
    await ctx.sleep("pause", 50);
    return { outer, top };
  });
  const task = await store.submit({ name: "nested", maxAttempts: 3 });
  // Before the fix: it succeeded, the replay's top-level 'load' returning the inner step's "inner-config".
  const failed = await waitForStatus(store, task.id, ["failed", "succeeded"], 5000);
  const error = failed.error as { code: string; retryable: boolean; message: string } | null;
  expect({ status: failed.status, attempt: failed.attempt, code: error?.code, retryable: error?.retryable, inner }).toEqual({ status: "failed", attempt: 1, code: "nested_step", retryable: false, inner: 0 });
  expect(error?.message).toMatch(/ctx\.step was called inside the function of step 'outer'/);
});

it("a join on the task's own id fails its attempts with InvalidArgument instead of parking for ever", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let thrown: unknown = null;
  worker.task("self-join", async (ctx) => {
    const child = await ctx.spawn("child", "noop", {});
    try {
      return await ctx.join("all", [child, ctx.taskId]);
    } catch (err) {
      thrown = err;
      throw err;
    }
  });
  worker.task("noop", () => 1);
  const task = await store.submit({ name: "self-join", maxAttempts: 3 });
  // Before the fix: parked, waiting for itself, re-checked every 30 s.
  const settled = await waitForStatus(store, task.id, ["failed", "succeeded"], 5000);
  expect({ status: settled.status, attempt: settled.attempt }).toEqual({ status: "failed", attempt: 3 });
  expect(thrown).toBeInstanceOf(InvalidArgument);
  expect(thrown).toMatchObject({ argument: "ids" });
  expect((thrown as Error).message).toMatch(/ids\[1\] is this task's own id .*cannot wait for itself/);
  expect((await store.steps(task.id)).map((s) => s.name)).toEqual(["child"]);
});

it("a retried parent replays a completed join's rows; a join named per attempt (durable-steps.md) reads the children again", async () => {
  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let fixed = false;
  const seen: Record<string, string[]> = { fixed: [], perAttempt: [] };
  worker.task("kid", () => {
    if (!fixed) throw new Error("kid broken");
    return "kid ok";
  });
  for (const variant of ["fixed", "perAttempt"] as const) {
    worker.task(`parent-${variant}`, async (ctx) => {
      const kid = await ctx.spawn("kid", "kid", {}, { maxAttempts: 1 });
      const [row] = await ctx.join(variant === "fixed" ? "kids" : `kids@${ctx.attempt}`, [kid]);
      seen[variant]?.push(String(row?.status));
      if (row?.status !== "succeeded") throw new Error("kid did not succeed");
      return row.result;
    });
  }
  const parents = await Promise.all(["fixed", "perAttempt"].map((v) => store.submit({ name: `parent-${v}`, maxAttempts: 1 })));
  for (const p of parents) await waitForStatus(store, p.id, ["failed"], 5000);
  fixed = true;
  for (const kid of await store.list({ name: "kid" })) {
    await store.retry(kid.id);
    await waitForStatus(store, kid.id, ["succeeded"], 5000);
  }
  for (const p of parents) await store.retry(p.id);
  const [replayed, reread] = await Promise.all(parents.map((p) => waitForStatus(store, p.id, ["failed", "succeeded"], 5000)));
  await waitFor(() => seen.perAttempt?.length === 2 && seen.fixed?.length === 2, 5000, "both parents' second runs");
  expect(seen).toEqual({ fixed: ["failed", "failed"], perAttempt: ["failed", "succeeded"] });
  expect([replayed?.status, reread?.status, reread?.result]).toEqual(["failed", "succeeded", "kid ok"]);
});

it("ctx.spawn with a group on a store without capabilities.groups throws UnsupportedBackend, as ctx.submit does, spawning nothing", async () => {
  const store = new MemoryStore();
  Object.defineProperty(store, "capabilities", { value: { ...store.capabilities, groups: false } });
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  let thrown: unknown = null;
  worker.task("parent", async (ctx) => {
    try {
      return await ctx.spawn("kid", "kid", {}, { group: "acme" });
    } catch (err) {
      thrown = err;
      throw err;
    }
  });
  const task = await store.submit({ name: "parent", maxAttempts: 1 });
  await waitForStatus(store, task.id, ["failed", "succeeded"], 5000);
  expect(thrown).toBeInstanceOf(UnsupportedBackend);
  expect((thrown as Error).message).toMatch(/submit option group 'acme' needs a store that records groups/);
  expect(await store.list({ name: "kid" })).toEqual([]);
  expect(await store.steps(task.id)).toEqual([]);
});

it("ctx.spawn refuses key and debounce: in its types, and at run time (a JS caller) for good, writing nothing", async () => {
  // Compile-time only: never called. A spawned child runs once per step name, so neither can apply.
  const typed = async (ctx: TaskContext) => {
    // @ts-expect-error a spawned child cannot be debounced
    await ctx.spawn("kid", "kid", {}, { debounce: { delayMs: 10 } });
    // @ts-expect-error a spawned child cannot have a key
    await ctx.spawn("kid", "kid", {}, { key: "k" });
    return ctx.spawn("kid", "kid", {}, { queue: "q", group: "acme", priority: 1 });
  };
  expect(typeof typed).toBe("function");

  const store = new MemoryStore();
  const worker = start(new Worker(store, { pollIntervalMs: 10, retryBackoffMs: 1 }));
  const thrown: unknown[] = [];
  worker.task("parent", async (ctx) => {
    const option = ctx.payload as "key" | "debounce";
    const given = option === "key" ? { key: "k" } : { key: "k", debounce: { delayMs: 10 } };
    try {
      return await ctx.spawn("kid", "kid", {}, given as never);
    } catch (err) {
      thrown.push(err);
      throw err;
    }
  });
  for (const option of ["debounce", "key"]) {
    const task = await store.submit({ name: "parent", payload: option, maxAttempts: 3 });
    // Before: the store's InvalidArgument, a retryable handler error, so all 3 attempts ran.
    const failed = await waitForStatus(store, task.id, ["failed", "succeeded"], 5000);
    const error = failed.error as { type: string; code: string; retryable: boolean; message: string } | null;
    expect({ status: failed.status, attempt: failed.attempt, type: error?.type, code: error?.code, retryable: error?.retryable }).toEqual({
      status: "failed",
      attempt: 1,
      type: "InvalidArgument",
      code: "invalid_spawn_option",
      retryable: false,
    });
    expect(error?.message).toMatch(new RegExp(`ctx\\.spawn\\('kid'\\) was given ${option}.*the step name already makes the spawn happen once`));
    expect(await store.steps(task.id)).toEqual([]);
  }
  expect(thrown).toHaveLength(2);
  expect(await store.list({ name: "kid" })).toEqual([]);
});
