/**
 * The README's `ctx.succeedIn(fn)` example, taken from the README verbatim:
 * the one import the block starts with is bound to the real `sql` of kysely;
 * the rest runs as written on a worker over the store a test gives it.
 */
import { readFileSync } from "node:fs";
import { sql } from "kysely";
import { expect } from "vitest";
import type { TaskStore } from "@cairnq/protocol";
import { Worker } from "../../src/index.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const IMPORT = 'import { sql } from "kysely";\n';

/** The README's succeedIn code block (indented in its list item), unindented, without its import line. */
function example(): string {
  const start = README.indexOf("- `succeedIn(fn)`");
  expect(start).toBeGreaterThanOrEqual(0);
  const match = /\n {2}```ts\n([\s\S]*?)\n {2}```\n/.exec(README.slice(start));
  const code = (match?.[1] ?? "")
    .split("\n")
    .map((line) => line.replace(/^ {2}/, ""))
    .join("\n");
  expect(code.startsWith(IMPORT)).toBe(true);
  expect(code).toContain("ctx.succeedIn(");
  return code.slice(IMPORT.length);
}

type Example = (worker: Worker, sql: unknown) => Promise<void>;
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => Example;

/** Runs the example's handler on `store` for one "book" task; returns the task's result once it succeeded. */
export async function runExample(store: TaskStore): Promise<unknown> {
  const worker = new Worker(store, { pollIntervalMs: 20 });
  await new AsyncFunction("worker", "sql", example())(worker, sql);
  const { id } = await store.submit({ name: "book", payload: { orderId: 42 } });
  const running = worker.run();
  try {
    const deadline = Date.now() + 30_000;
    while ((await store.getStatus(id))?.status !== "succeeded") {
      expect(Date.now(), "the 'book' task did not succeed within 30 s").toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await worker.stop();
    await running;
  }
  return (await store.get(id))?.result;
}
