/**
 * Real stores for the worker tests that must cross a real database: SQLite
 * on a temp file per test, Postgres in a fresh schema per test (dropped at
 * close). Postgres never skips: a missing or unreachable CAIRNQ_TEST_PG_DSN
 * fails the test and says why.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { TaskStore } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";

export interface OpenStore {
  readonly store: TaskStore;
  close(): Promise<void>;
}

export interface Backend {
  readonly label: string;
  open(): Promise<OpenStore>;
}

export const SQLITE: Backend = {
  label: "sqlite",
  async open() {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-worker-"));
    const store = new SQLiteStore(join(dir, "tasks.db"));
    return {
      store,
      close: async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
};

function pgDsn(): string {
  const dsn = process.env.CAIRNQ_TEST_PG_DSN;
  if (dsn === undefined || dsn === "") {
    throw new Error(
      "CAIRNQ_TEST_PG_DSN is not set, so the worker tests on Postgres cannot run (they never skip). " +
        "Run them through the root `pnpm test` (it provides a Postgres), or set CAIRNQ_TEST_PG_DSN=postgres://user@host:5432/db",
    );
  }
  return dsn;
}

export const POSTGRES: Backend = {
  label: "postgres",
  async open() {
    const dsn = pgDsn();
    const schema = `cq_worker_${randomBytes(5).toString("hex")}`;
    const admin = new pg.Client({ connectionString: dsn });
    try {
      await admin.connect();
    } catch (err) {
      throw new Error(`CAIRNQ_TEST_PG_DSN is unreachable: ${String(err)}. Start Postgres there, or run the root \`pnpm test\``, { cause: err });
    }
    await admin.query(`CREATE SCHEMA "${schema}"`);
    const store = new PostgresStore(dsn, { schema, max: 4 });
    return {
      store,
      close: async () => {
        try {
          await store.close();
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await admin.end();
        }
      },
    };
  },
};

export const BACKENDS: readonly Backend[] = [SQLITE, POSTGRES];
