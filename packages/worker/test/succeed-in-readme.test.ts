/**
 * The README's `ctx.succeedIn(fn)` example, taken from the README verbatim
 * and run on a worker over a real store — SQLite on a scratch file, Postgres
 * in a fresh schema — each with the example's `bookings` table. The one
 * import the block starts with is bound to the real `sql` of kysely; the rest
 * runs as written. Checked from outside: the task succeeded with the
 * handler's result, and the booking it wrote committed with it.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { sql } from "kysely";
import type { TaskStore } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { Worker } from "../src/index.js";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");
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
async function runExample(store: TaskStore): Promise<unknown> {
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

describe("the README's succeedIn example", () => {
  const admin = new PgAdmin();
  afterAll(() => admin.close());

  it("SQLite: the booking commits together with the settlement", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-readme-succeed-in-"));
    const file = join(dir, "shop.db");
    const app = new Database(file);
    try {
      app.exec("CREATE TABLE bookings (order_id INTEGER PRIMARY KEY)");
      const store = new SQLiteStore(file);
      try {
        expect(await runExample(store)).toEqual({ booked: 42 });
      } finally {
        await store.close();
      }
      expect(app.prepare("SELECT order_id FROM bookings").all()).toEqual([{ order_id: 42 }]);
    } finally {
      app.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("Postgres: the booking commits together with the settlement", async () => {
    const schema = await admin.createSchema("readme_succeed_in");
    try {
      await admin.q(`CREATE TABLE "${schema}".bookings (order_id integer PRIMARY KEY)`);
      const store = new PostgresStore(pgDsn(), { schema });
      try {
        expect(await runExample(store)).toEqual({ booked: 42 });
      } finally {
        await store.close();
      }
      expect(await admin.q(`SELECT order_id FROM "${schema}".bookings`)).toEqual([{ order_id: 42 }]);
    } finally {
      await admin.dropSchema(schema);
    }
  }, 60_000);
});
