/**
 * The README's "Transactions: `withTransaction(trx)`" examples, run as written
 * in a child process (SQLite on a scratch file; Postgres in a fresh schema),
 * then checked from outside: the committed transaction left its order row and
 * its task, the rolled-back one neither.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll, describe, expect, it } from "vitest";
import type { TaskStore } from "@cairnq/protocol";

const here = dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(join(here, "..", "..", "README.md"), "utf8");

/** The README's code blocks of the transactions section, in order. */
function transactionBlocks(): string[] {
  const start = readme.indexOf("### Transactions: `withTransaction(trx)`");
  expect(start).toBeGreaterThanOrEqual(0);
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

function block(marker: string): string {
  const found = transactionBlocks().filter((code) => code.includes(marker));
  expect(found).toHaveLength(1);
  return found[0] as string;
}

/** Runs `code` as an ES module written inside the package, so its imports resolve as the README's reader's would. */
async function run(code: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const file = join(here, `.readme-transactions-${process.pid}.mjs`);
  writeFileSync(file, code);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [file], { env: { ...process.env, ...env }, timeout: 60_000 });
    return stdout.trim().split("\n");
  } finally {
    rmSync(file, { force: true });
  }
}

/** The "ship-order" tasks' payloads, and the ids the two keys point at. */
async function shipTasks(store: TaskStore): Promise<unknown> {
  const tasks = await store.list({ name: "ship-order" });
  return { payloads: tasks.map((t) => t.payload), committed: (await store.getByKey("ship:42"))?.id, rolledBack: await store.getByKey("ship:43") };
}

describe("the README's withTransaction examples", () => {
  const admin = new PgAdmin();
  afterAll(() => admin.close());

  it("SQLite: runs as written; the committed order and task exist, the rolled-back ones do not", async () => {
    const code = block("new SQLiteStore(");
    const dir = mkdtempSync(join(tmpdir(), "cairnq-readme-trx-"));
    const db = join(dir, "shop.db");
    try {
      expect(await run(code.replaceAll('"shop.db"', JSON.stringify(db)))).toEqual(["payment declined", "queued null"]);
      const app = new Database(db, { readonly: true });
      try {
        expect(app.prepare("SELECT id FROM orders ORDER BY id").all()).toEqual([{ id: 42 }]);
      } finally {
        app.close();
      }
      const store = new SQLiteStore(db);
      try {
        expect(await shipTasks(store)).toEqual({ payloads: [{ orderId: 42 }], committed: expect.stringMatching(/^task_/), rolledBack: null });
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it("Postgres: runs as written in a fresh schema; the committed order and task exist, the rolled-back ones do not", async () => {
    const code = block("new PostgresStore(");
    const schema = await admin.createSchema("readme_trx");
    try {
      expect(code).toContain('{ schema: "public" }');
      const fresh = code.replace('{ schema: "public" }', `{ schema: ${JSON.stringify(schema)} }`);
      expect(await run(fresh, { DATABASE_URL: pgDsn() })).toEqual(["payment declined", "queued null"]);
      expect(await admin.q(`SELECT id FROM "${schema}".orders ORDER BY id`)).toEqual([{ id: 42 }]);
      const store = new PostgresStore(pgDsn(), { schema });
      try {
        expect(await shipTasks(store)).toEqual({ payloads: [{ orderId: 42 }], committed: expect.stringMatching(/^task_/), rolledBack: null });
      } finally {
        await store.close();
      }
    } finally {
      await admin.dropSchema(schema);
    }
  }, 90_000);
});
