/**
 * What the durable-step methods refuse, on the in-memory store and on
 * SQLite, before anything is written or the task silently succeeds: a
 * replay that reaches a journal entry of another kind, unknown options of
 * `ctx.waitFor`, `ctx.spawn` and `ctx.submit` (checked as `client.submit`
 * checks them), step methods in a batch handler, delays past `MAX_DELAY_MS`
 * and wake times past the largest JavaScript date.
 */
import { afterEach, describe, expect, it } from "vitest";
import { InvalidArgument, MAX_DELAY_MS, PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import type { TestQueue } from "@cairnq/testing";
import { createTestQueue } from "@cairnq/testing";
import type { TaskContext } from "@cairnq/worker";

const START = Date.UTC(2030, 0, 1);
type Kind = "step" | "sleep" | "wait" | "spawn" | "join";

/** One call of each kind at step name "x"; a replayed sleep asks for ten minutes, which must not be skipped. */
function call(ctx: TaskContext, kind: Kind, replay: boolean): Promise<unknown> {
  switch (kind) {
    case "step":
      return ctx.step("x", () => "stepped");
    case "sleep":
      return ctx.sleep("x", replay ? 600_000 : 0);
    case "wait":
      return ctx.waitFor("x");
    case "spawn":
      return ctx.spawn("x", "child.x", {});
    case "join":
      return ctx.join("x", []);
  }
}

/** Runs `fn` and returns what it threw. */
async function thrown(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a throw");
}

describe.each(["memory", "sqlite"] as const)("durable-step checks on the %s store", (store) => {
  let queue: TestQueue;
  const open = async (): Promise<TestQueue> => {
    queue = await createTestQueue({ store, now: START });
    return queue;
  };

  afterEach(async () => {
    await queue.close();
  });

  it.each([
    ["step", "sleep"],
    ["step", "wait"],
    ["sleep", "step"],
    ["wait", "sleep"],
    ["spawn", "join"],
    ["join", "spawn"],
  ] as const)("a journal entry recorded by %s does not answer a %s on replay: the attempt fails saying both kinds", async (first, second) => {
    const q = await open();
    q.worker({ retryBackoffMs: 1 }).task("changed", async (ctx) => {
      if (ctx.attempt === 1) {
        await call(ctx, first, false);
        throw new Error("crash after the first call");
      }
      await call(ctx, second, true);
      return "silently succeeded";
    });
    q.worker().task("child.x", () => null);
    const task = await q.client.submit("changed", {});
    // A wait recorded done without parking: its message is already there.
    if (first === "wait") await q.client.send(task.id, "x", "msg");
    await q.drain();
    await q.advance(1000);
    const row = await q.client.get(task.id);
    expect(row?.status).toBe("failed");
    const error = row?.error as { type: string; message: string };
    expect(error.type).toBe("InvalidArgument");
    expect(error.message).toContain(`the journal of task ${task.id} holds a '${first}' entry`);
    expect(error.message).toMatch(/at 'x', but the handler called ctx\.\S+ there/);
    const journal = await q.client.steps(task.id);
    expect(journal.map((s) => [s.name, s.kind])).toEqual([["x", first]]);
  });

  it("ctx.waitFor, ctx.spawn and ctx.submit refuse options they do not have, with client.submit's message", async () => {
    const q = await open();
    const errors: Error[] = [];
    q.worker().task("typos", async (ctx) => {
      errors.push(await thrown(() => ctx.waitFor("m", { timeout: 10 } as never)));
      errors.push(await thrown(() => ctx.waitFor("m", 10 as never)));
      errors.push(await thrown(() => ctx.spawn("c", "child.x", {}, { priorty: 1 } as never)));
      errors.push(await thrown(() => ctx.submit("child.x", {}, { priorty: 1 } as never)));
      return "checked";
    });
    const task = await q.client.submit("typos", {});
    await q.drain();
    expect((await q.client.get(task.id))?.result).toBe("checked");
    for (const err of errors) expect(err).toBeInstanceOf(InvalidArgument);
    expect(errors[0]?.message).toBe("'timeout' is not an option of ctx.waitFor; the options are timeoutMs");
    expect(errors[1]?.message).toBe("ctx.waitFor options must be an object, got a number");
    const fromSubmit = await thrown(() => q.client.submit("child.x", {}, { priorty: 1 } as never));
    expect(fromSubmit.message).toMatch(/did you mean 'priority'\?/);
    expect(errors[2]?.message).toBe(fromSubmit.message.replace("of submit", "of ctx.spawn"));
    expect(errors[3]?.message).toBe(fromSubmit.message.replace("of submit", "of ctx.submit"));
    // Nothing was written: no journal entry, no child.
    expect(await q.client.steps(task.id)).toEqual([]);
    expect(await q.client.list({ name: "child.x" })).toEqual([]);
  });

  it("every step method of a batch handler's contexts throws the batch refusal first, whatever it was passed", async () => {
    const q = await open();
    const errors: Error[] = [];
    q.worker().task("batched", { batch: 2 }, async (ctxs) => {
      const ctx = ctxs[0] as (typeof ctxs)[number];
      const calls: (() => Promise<unknown>)[] = [
        () => ctx.step("x", () => 1),
        () => ctx.sleep("x", "soon" as never),
        () => ctx.sleepUntil("x", new Date(Number.NaN)),
        () => ctx.waitFor("x", 10 as never),
        () => ctx.spawn("x", "child.x", {}, { priorty: 1 } as never),
        () => ctx.join("x", "ids" as never),
      ];
      for (const c of calls) errors.push(await thrown(c));
      return {};
    });
    await q.client.submit("batched", {});
    await q.drain();
    expect(errors.map((err) => [err.name, (err as InvalidArgument).argument])).toEqual(
      ["step", "sleep", "sleepUntil", "waitFor", "spawn", "join"].map((method) => ["InvalidArgument", method]),
    );
    for (const err of errors) expect(err.message).toMatch(/^ctx\.\w+ is not available in a batch handler: a batch call runs several tasks, and a durable step belongs to one/);
  });

  it("a delay past MAX_DELAY_MS or a wake time past the largest date is refused before anything is written; the latest wake time before it parks", async () => {
    const q = await open();
    const errors: Error[] = [];
    q.worker().task("far", async (ctx) => {
      errors.push(await thrown(() => ctx.sleep("z", Number.MAX_SAFE_INTEGER)));
      errors.push(await thrown(() => ctx.waitFor("m", { timeoutMs: Number.MAX_SAFE_INTEGER })));
      errors.push(await thrown(() => ctx.sleepUntil("z", new Date(PARK_FOREVER_AT_MS))));
      errors.push(await thrown(() => ctx.spawn("kid", "child.x", {}, { runAtDelayMs: MAX_DELAY_MS + 1 })));
      errors.push(await thrown(() => ctx.submit("child.x", {}, { runAtDelayMs: MAX_DELAY_MS + 1 })));
      errors.push(await thrown(() => ctx.sleep("z", MAX_DELAY_MS + 1)));
      await ctx.sleepUntil("last", PARK_FOREVER_AT_MS - 1);
      return "woke";
    });
    const task = await q.client.submit("far", {});
    await q.drain();
    expect(errors.map((err) => [err.name, (err as InvalidArgument).argument])).toEqual([
      ["InvalidArgument", "ms"],
      ["InvalidArgument", "timeoutMs"],
      ["InvalidArgument", "until"],
      ["InvalidArgument", "runAtDelayMs"],
      ["InvalidArgument", "runAtDelayMs"],
      ["InvalidArgument", "ms"],
    ]);
    expect(errors[0]?.message).toMatch(/^ctx\.sleep\('z', 9007199254740991\) asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS \(3153600000000 ms, 100 years\)/);
    expect(errors[1]?.message).toMatch(/^ctx\.waitFor\('m', \{ timeoutMs: 9007199254740991 \}\) asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS/);
    for (const err of errors.slice(3, 5)) expect(err.message).toMatch(/^runAtDelayMs asks for a delay of 3153600000001 ms, over MAX_DELAY_MS/);
    expect(errors[5]?.message).toMatch(/^ctx\.sleep\('z', 3153600000001\) asks for a delay/);
    expect(errors[2]?.message).toMatch(/^ctx\.sleepUntil\('z', 8640000000000000\) would wake at 8640000000000000/);
    expect(await q.client.get(task.id)).toMatchObject({ status: "queued", run_at_ms: PARK_FOREVER_AT_MS - 1 });
    // Neither refused child was written.
    expect((await q.client.list()).map((row) => row.name)).toEqual(["far"]);
    expect((await q.client.steps(task.id)).map((s) => [s.name, s.kind, s.wakeAtMs])).toEqual([["last", "sleep", PARK_FOREVER_AT_MS - 1]]);
  });
});
