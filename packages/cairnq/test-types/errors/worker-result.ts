// See submit-payload.ts for the `// error:` comments.
import { defineTask } from "cairnq";
import type { Worker } from "cairnq";

const summarize = defineTask<{ url: string }, { summary: string }>("summarize");

export function register(worker: Worker): void {
  // error: Type 'void' is not assignable to type '\{ summary: string; \}'
  worker.task(summarize, async () => {});
  // error: Type 'number' is not assignable to type 'string'
  worker.task(summarize, async () => ({ summary: 1 }));
  // error: Type 'void' is not assignable to type '\{ summary: string; \}'
  worker.task(summarize, { concurrency: 2 }, async () => {});
  worker.task(summarize, async (ctx) => {
    // error: Expected 1 arguments, but got 0
    await ctx.succeed();
    return { summary: "s" };
  });
}
