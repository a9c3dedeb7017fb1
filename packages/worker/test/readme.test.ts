/** The README's example, verbatim except that output is collected instead of printed. */
import { expect, it } from "vitest";
import { defineTask, TaskError } from "@cairnq/protocol";
import { Worker } from "../src/index.js";
import { MemoryStore } from "@cairnq/conformance";

it("runs the README example", async () => {
  const lines: string[] = [];
  const resize = defineTask<{ url: string; width: number }, { bytes: number }>("image.resize");

  const store = new MemoryStore();
  const worker = new Worker(store, { concurrency: 4 });

  worker.task(resize, async (ctx, { url, width }) => {
    if (width <= 0) throw new TaskError(`width must be positive, got ${width}`, { code: "bad_input" });
    await ctx.progress(0.5, `resizing ${url}`);
    return { bytes: width * 100 };
  });

  worker.on("task:succeeded", (e) => lines.push(`${e.name} ${e.taskId} took ${e.durationMs}ms`));

  const task = await store.submit({ name: resize.name, payload: { url: "https://example.com/a.png", width: 64 } });
  const running = worker.run();
  while ((await store.get(task.id))?.status !== "succeeded") await new Promise((r) => setTimeout(r, 10));
  expect((await store.get(task.id))?.result).toEqual({ bytes: 6400 });
  await worker.stop();
  await running;
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^image\.resize task_\w+ took \d+ms$/);
});
