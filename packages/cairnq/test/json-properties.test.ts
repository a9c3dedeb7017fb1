/**
 * A function or symbol held by an object property has no JSON form, and
 * `JSON.stringify` would leave it out without a word: end to end on SQLite,
 * a payload holding one is refused at submit (nothing written), and a handler
 * or step result holding one fails its task for good as
 * `unserializable_result`, as the README's "What a task can hold" and
 * docs/durable-steps.md say. An `undefined` property is still left out.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { CairnQ, SerializationError, Worker } from "cairnq";

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

it("a function or symbol property is refused in a payload at submit, and in a handler's or a step's result as unserializable_result", async () => {
  dir = await mkdtemp(join(tmpdir(), "cairnq-json-properties-"));
  const file = join(dir, "tasks.db");
  const client = CairnQ.sqlite(file);
  const worker = Worker.sqlite(file, { pollIntervalMs: 10 });
  try {
    const refused = await client.submit("x", { keep: 1, f: () => 1 }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(SerializationError);
    expect((refused as SerializationError).path).toBe("payload.f");
    await expect(client.submit("x", { keep: 1, s: Symbol("s") })).rejects.toThrow(/cannot encode payload\.s as JSON: the property is a symbol/);
    expect(await client.list()).toEqual([]);

    const kept = await client.submit("x", { keep: 1, gone: undefined });
    expect((await client.get(kept.id))?.payload).toEqual({ keep: 1 });

    let runs = 0;
    worker.task("result", () => {
      runs++;
      return { keep: 1, f: () => 1 } as never;
    });
    worker.task("step", async (ctx) => {
      runs++;
      return { got: await ctx.step("s", () => ({ keep: 1, s: Symbol("s") }) as never) };
    });
    const run = worker.run();
    const ended = [];
    for (const name of ["result", "step"]) {
      const task = await client.submit(name, {}, { maxAttempts: 3 });
      ended.push(await client.wait(task.id, { timeoutMs: 10_000 }));
    }
    await worker.stop();
    await run;
    expect(runs).toBe(2);
    expect(ended.map(({ status, attempt, result, error }) => ({ status, attempt, result, error }))).toMatchObject([
      {
        status: "failed",
        attempt: 1,
        result: null,
        error: { code: "unserializable_result", retryable: false, message: expect.stringMatching(/cannot encode result\.f as JSON: the property is a function/) as unknown },
      },
      {
        status: "failed",
        attempt: 1,
        result: null,
        error: { code: "unserializable_result", retryable: false, message: expect.stringMatching(/the result of step 's'\.s as JSON: the property is a symbol/) as unknown },
      },
    ]);
  } finally {
    await worker.close();
    await client.close();
  }
});
