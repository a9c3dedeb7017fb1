/**
 * Durable steps under the virtual clock, on the in-memory store and on
 * SQLite: replay across attempts and resumes, occurrences, sleeps of a day
 * that give the worker slot back, waits and messages, spawn and join — the
 * worker's half of the feature (the store's half is the kit's `steps-*` cases).
 */
import { afterEach, describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import type { TestQueue } from "@cairnq/testing";
import { createTestQueue } from "@cairnq/testing";
import type { TaskContext, Worker } from "@cairnq/worker";

const START = Date.UTC(2030, 0, 1);
const HOUR = 3_600_000;
const DAY = 86_400_000;

describe.each(["memory", "sqlite"] as const)("durable steps on the %s store", (store) => {
  let queue: TestQueue;
  const open = async (): Promise<TestQueue> => {
    queue = await createTestQueue({ store, now: START });
    return queue;
  };

  afterEach(async () => {
    await queue.close();
  });

  it("a recorded step never runs again: a later attempt gets its value; a loop gets one occurrence per use", async () => {
    const q = await open();
    const runs: Record<string, number> = {};
    const count = (key: string): number => (runs[key] = (runs[key] ?? 0) + 1);
    q.worker({ retryBackoffMs: 1 }).task("order", async (ctx) => {
      const charge = await ctx.step("charge", ({ idempotencyKey }) => ({ n: count("charge"), idempotencyKey }));
      const pages: number[] = [];
      for (let i = 0; i < 3; i++) pages.push(await ctx.step("page", () => count(`page${i}`) * 10 + i));
      if (ctx.attempt === 1) throw new Error("crash after the steps");
      return { charge, pages };
    });
    const task = await q.client.submit("order", {});
    await q.drain();
    await q.advance(1000);
    const row = await q.client.get(task.id);
    expect(row?.status).toBe("succeeded");
    expect(row?.result).toEqual({ charge: { n: 1, idempotencyKey: `${task.id}:charge` }, pages: [10, 11, 12] });
    expect(runs).toEqual({ charge: 1, page0: 1, page1: 1, page2: 1 });
    const journal = await q.client.steps(task.id);
    expect(journal.map((s) => [s.name, s.kind, s.status, s.attempt])).toEqual([
      ["charge", "step", "done", 1],
      ["page", "step", "done", 1],
      ["page#2", "step", "done", 1],
      ["page#3", "step", "done", 1],
    ]);
  });

  it("a step that throws fails the attempt (retry policy applies), its error is in the journal, and it runs again on the next attempt", async () => {
    const q = await open();
    let calls = 0;
    q.worker({ retryBackoffMs: 1000 }).task("flaky", async (ctx) =>
      ctx.step("call", () => {
        calls += 1;
        if (calls === 1) throw new Error("upstream 503");
        return "ok";
      }),
    );
    const task = await q.client.submit("flaky", {});
    const first = await q.drain();
    expect(first.ran.map((r) => r.outcome)).toEqual(["retrying"]);
    const [failed] = await q.client.steps(task.id);
    expect([failed?.status, (failed?.error as { message?: string }).message]).toEqual(["failed", "upstream 503"]);
    await q.advance(1000);
    expect((await q.client.get(task.id))?.result).toBe("ok");
    expect((await q.client.steps(task.id)).map((s) => [s.status, s.attempt])).toEqual([["done", 2]]);
  });

  it("refuses two steps of one name at once, a name with '#', and steps in a batch handler, saying what to do", async () => {
    const q = await open();
    const errors: unknown[] = [];
    q.worker().task("twice", async (ctx) => {
      await Promise.all([ctx.step("fetch", () => 1), ctx.step("fetch", () => 2)]).catch((err: unknown) => errors.push(err));
      await ctx.step("a#b", () => 1).catch((err: unknown) => errors.push(err));
      return "done";
    });
    q.worker().task("batched", { batch: 2 }, async (ctxs) => {
      await (ctxs[0] as (typeof ctxs)[number]).step("x", () => 1).catch((err: unknown) => errors.push(err));
      return {};
    });
    await q.client.submit("twice", {});
    await q.client.submit("batched", {});
    await q.drain();
    expect(errors).toHaveLength(3);
    for (const err of errors) expect(err).toBeInstanceOf(InvalidArgument);
    const messages = errors.map((err) => (err as Error).message).join("\n");
    expect(messages).toMatch(/step 'fetch' is already running.*give each its own name/);
    expect(messages).toMatch(/contains '#'/);
    expect(messages).toMatch(/not available in a batch handler/);
  });

  it("a sleep of a day gives the slot back (concurrency 1 runs other tasks), never uses up maxAttempts, and resumes after the day with steps replayed", async () => {
    const q = await open();
    let charged = 0;
    const worker = q.worker({ concurrency: 1 });
    const parkedEvents: number[] = [];
    worker.on("task:parked", (e) => parkedEvents.push(e.attempt));
    worker.task("remind", async (ctx) => {
      await ctx.step("charge", () => (charged += 1));
      await ctx.sleep("wait a day", DAY);
      await ctx.sleep("and an hour", HOUR);
      return "reminded";
    });
    q.worker({ concurrency: 1 }).task("quick", () => "quick");
    const sleeper = await q.client.submit("remind", {}, { maxAttempts: 1 });
    expect((await q.drain()).ran.map((r) => r.outcome)).toEqual(["requeued"]);
    expect(parkedEvents).toEqual([1]);
    expect(await q.client.get(sleeper.id)).toMatchObject({ status: "queued", attempt: 0, worker_id: null, run_at_ms: START + DAY });
    // The only slot is free: another task runs while the first sleeps.
    expect(await q.client.call("quick", {})).toBe("quick");
    await q.advance(DAY - 1);
    expect((await q.client.get(sleeper.id))?.status).toBe("queued");
    await q.advance(1);
    expect(await q.client.get(sleeper.id)).toMatchObject({ status: "queued", run_at_ms: START + DAY + HOUR });
    await q.advance(HOUR);
    expect(await q.client.get(sleeper.id)).toMatchObject({ status: "succeeded", result: "reminded", attempt: 1 });
    expect(charged).toBe(1);
    expect((await q.client.steps(sleeper.id)).map((s) => [s.name, s.kind, s.status])).toEqual([
      ["charge", "step", "done"],
      ["wait a day", "sleep", "done"],
      ["and an hour", "sleep", "done"],
    ]);
  });

  it("waitFor: a message sent before the wait is kept, a message wakes a parked wait at once, and a timeout resolves null", async () => {
    const q = await open();
    q.worker().task("approve", async (ctx) => {
      const early = await ctx.waitFor("early");
      const approval = await ctx.waitFor<{ by: string }>("approval");
      const late = await ctx.waitFor("late", { timeoutMs: HOUR });
      return { early, approval, late };
    });
    const task = await q.client.submit("approve", {}, { runAtDelayMs: 10 });
    expect((await q.client.send(task.id, "early", 1)).woke).toBe(false);
    await q.advance(10);
    expect(await q.client.get(task.id)).toMatchObject({ status: "queued", attempt: 0 });
    expect((await q.client.steps(task.id)).map((s) => [s.name, s.status, s.waitingFor])).toEqual([
      ["early", "done", null],
      ["approval", "waiting", "approval"],
    ]);
    expect((await q.client.send(task.id, "approval", { by: "ana" })).woke).toBe(true);
    await q.drain();
    expect(await q.client.get(task.id)).toMatchObject({ status: "queued", run_at_ms: START + 10 + HOUR });
    await q.advance(HOUR);
    expect(await q.client.get(task.id)).toMatchObject({ status: "succeeded", result: { early: 1, approval: { by: "ana" }, late: null } });
    await expect(q.client.send("task_01J0000000000000000000NONE", "x")).rejects.toThrow(InvalidArgument);
  });

  it("a message sent before a wait's deadline is its answer even when a crash delays the resume past the deadline; one sent after the deadline is kept for the next wait", async () => {
    const q = await open();
    let runs = 0;
    let crashOn = 0;
    let crashing: Worker | null = null;
    const handler = async (ctx: TaskContext): Promise<unknown> => {
      runs += 1;
      if (runs === crashOn) {
        // A crash: the worker goes without settling, and this run never continues.
        void crashing?.stop();
        return new Promise(() => {});
      }
      const first = await ctx.waitFor("approval", { timeoutMs: 30 });
      const second = await ctx.waitFor("approval", { timeoutMs: 30 });
      return [first, second];
    };
    const worker = (): Worker => {
      crashing = q.worker({ leaseMs: 1000, stopTimeoutMs: 0, logger: null });
      crashing.task("approve", handler);
      return crashing;
    };
    worker();

    // In time: the message (10 ms after the park) wakes the task, whose resumed run crashes; the task resumes
    // after the lease ran out, far past the deadline, and the wait still answers with the message.
    const inTime = await q.client.submit("approve", {});
    await q.drain();
    crashOn = runs + 1;
    await q.advance(10);
    expect((await q.client.send(inTime.id, "approval", "yes")).woke).toBe(true);
    await q.drain();
    expect(runs).toBe(crashOn);
    worker();
    await q.advance(1000);
    await q.advance(30);
    expect(await q.client.get(inTime.id)).toMatchObject({ status: "succeeded", result: ["yes", null] });

    // Too late: the deadline passed, the resumed run crashed, and the message came after the deadline: the
    // first wait timed out; the message is left for the next wait of its name.
    const late = await q.client.submit("approve", {});
    await q.drain();
    crashOn = runs + 1;
    await q.advance(30);
    expect(runs).toBe(crashOn);
    worker();
    await q.advance(10);
    expect((await q.client.send(late.id, "approval", "late")).woke).toBe(false);
    await q.advance(1000);
    expect(await q.client.get(late.id)).toMatchObject({ status: "succeeded", result: [null, "late"] });
  });

  it("spawn submits each child once however often the parent replays; join parks until every child is terminal and returns their rows in order", async () => {
    const q = await open();
    q.worker({ concurrency: 1 }).task("fanout", async (ctx, { n }: { n: number }) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await ctx.spawn("part", "square", { i }));
      await ctx.sleep("breathe", 5);
      const rows = await ctx.join("all", ids);
      return rows.map((row) => row?.result);
    });
    q.worker().task("square", (_ctx, { i }: { i: number }) => i * i);
    const parent = await q.client.submit("fanout", { n: 3 });
    await q.advance(5);
    await q.drain();
    const row = await q.client.get(parent.id);
    expect(row).toMatchObject({ status: "succeeded", result: [0, 1, 4] });
    const children = await q.client.list({ name: "square" });
    expect(children).toHaveLength(3);
    for (const child of children) expect(child).toMatchObject({ parent_id: parent.id, root_id: parent.id, status: "succeeded" });
    expect((await q.client.steps(parent.id)).map((s) => s.kind)).toEqual(["spawn", "spawn", "spawn", "sleep", "join"]);
  });
});
