// A handler for a TaskDef gets its payload type and must return its result type; by name, both are inferred.
import { defineTask } from "cairnq";
import type { Task, TaskContext, Worker } from "cairnq";
import type { Equal } from "./assert.ts";
import { expectType } from "./assert.ts";

const summarize = defineTask<{ url: string }, { summary: string }>("summarize");
const fire = defineTask<{ at: string }, void>("fire");
const child = defineTask<{ n: number }, number>("child");
const maybe = defineTask<{ id: string }, string | undefined>("maybe");

export function register(worker: Worker): void {
  worker.task(summarize, async (ctx, payload) => {
    expectType<Equal<typeof payload, { url: string }>>();
    expectType<Equal<typeof ctx, TaskContext<{ url: string }, { summary: string }>>>();
    return { summary: payload.url };
  });
  worker.task(summarize, (_ctx, { url }) => ({ summary: url }));
  // @ts-expect-error a handler for a TaskDef must return its result (void would store null, typed as the result)
  worker.task(summarize, async () => {});
  // @ts-expect-error the wrong result type
  worker.task(summarize, async () => ({ summary: 1 }));
  // A TaskDef whose result is void takes a handler that returns nothing.
  worker.task(fire, async () => {});

  worker.task(summarize, { concurrency: 2 }, async (_ctx, { url }) => ({ summary: url }));
  // @ts-expect-error with options too
  worker.task(summarize, { concurrency: 2 }, async () => {});
  worker.task(summarize, { batch: 8 }, async (ctxs) => {
    expectType<Equal<typeof ctxs, TaskContext<{ url: string }, { summary: string }>[]>>();
    return Object.fromEntries(ctxs.map((ctx) => [ctx.taskId, { summary: ctx.payload.url }]));
  });

  // By name: the payload type is the handler's annotation, the result what it returns.
  worker.task("add", (_ctx, p: { a: number; b: number }) => p.a + p.b);
  worker.task("noop", async () => {});

  // ctx.succeed's result may be left out only when the result type admits undefined.
  worker.task(summarize, async (ctx) => {
    await ctx.succeed({ summary: "s" });
    // @ts-expect-error a typed result cannot be left out (null would be stored where { summary: string } is promised)
    await ctx.succeed();
    // @ts-expect-error nor be undefined
    await ctx.succeed(undefined);
    return { summary: "s" };
  });
  worker.task(summarize, { batch: 8 }, async (ctxs) => {
    // @ts-expect-error in a batch handler too
    await ctxs[0]?.succeed();
  });
  worker.task(fire, async (ctx) => {
    await ctx.succeed();
  });
  worker.task(maybe, async (ctx) => {
    await ctx.succeed();
    return undefined;
  });
  worker.task("by-name", async (ctx) => {
    await ctx.succeed();
  });
  worker.task("by-name-any", async (ctx: TaskContext) => {
    await ctx.succeed();
    await ctx.succeed({ anything: true });
    return 1;
  });
  worker.task(child, async (ctx) => {
    expectType<Equal<Parameters<typeof ctx.succeed>, [result: number]>>();
    await ctx.succeed(1);
    return 1;
  });

  // Child submits are typed from a TaskDef like the client's.
  worker.task(summarize, async (ctx) => {
    const sub = await ctx.submit(child, { n: 1 });
    expectType<Equal<typeof sub, Task<{ n: number }, number>>>();
    // @ts-expect-error the child's payload is required
    await ctx.submit(child);
    // @ts-expect-error the child's payload type is checked
    await ctx.submit(child, { n: "1" });
    // @ts-expect-error the row's type is the TaskDef's, not the annotation's
    const wrong: Task<{ n: number }, string> = await ctx.submit(child, { n: 1 });
    void wrong;
    return { summary: "s" };
  });

  // A spawned child's key is its step name: spawn takes neither key nor debounce.
  worker.task(summarize, async (ctx) => {
    const spawned = await ctx.spawn("c", child, { n: 1 }, { priority: 1 });
    void spawned;
    // @ts-expect-error no key: the step name keys the child
    await ctx.spawn("c", child, { n: 1 }, { key: "k" });
    // @ts-expect-error no debounce on a spawn
    await ctx.spawn("c", child, { n: 1 }, { debounce: { delayMs: 10 } });
    return { summary: "s" };
  });
}
