/**
 * Real stores for the worker tests that must cross a real database: SQLite
 * on a temp file per test, Postgres in a fresh schema per test (dropped at
 * close), and MySQL/MariaDB in a fresh database per test (dropped at close;
 * not in `BACKENDS`: a test that needs it names it). Postgres and MySQL never
 * skip: a missing or unreachable CAIRNQ_TEST_PG_DSN or CAIRNQ_TEST_MYSQL_DSN
 * fails the test and says why.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskStore } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { MySQLAdmin, mysqlDsn, PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterEach } from "vitest";

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

export const POSTGRES: Backend = {
  label: "postgres",
  async open() {
    const admin = new PgAdmin();
    const schema = await admin.createSchema("cq_worker");
    const store = new PostgresStore(pgDsn(), { schema, max: 4 });
    return {
      store,
      close: async () => {
        try {
          await store.close();
          await admin.dropSchema(schema);
        } finally {
          await admin.close();
        }
      },
    };
  },
};

let mysqlDatabases = 0;

export const MYSQL: Backend = {
  label: "mysql",
  async open() {
    const admin = new MySQLAdmin(mysqlDsn());
    const id = `cq_worker_${process.pid}_${++mysqlDatabases}`;
    const store = new MySQLStore(await admin.createDatabase(id), { max: 4 });
    return {
      store,
      close: async () => {
        try {
          await store.close();
          await admin.dropDatabase(id);
        } finally {
          await admin.close();
        }
      },
    };
  },
};

export const BACKENDS: readonly Backend[] = [SQLITE, POSTGRES];

/**
 * For a `describe` block whose tests each open one store: registers an `afterEach` that closes the store the
 * test opened (and drops its file or schema), and returns the opener.
 *
 * @example
 * describe.each(BACKENDS as Backend[])("on $label", (backend) => {
 *   const open = storePerTest();
 *   it("…", async () => {
 *     const store = await open(backend);
 *   });
 * });
 */
export function storePerTest(): (backend: Backend) => Promise<TaskStore> {
  let opened: OpenStore | null = null;
  afterEach(async () => {
    await opened?.close();
    opened = null;
  });
  return async (backend) => {
    opened = await backend.open();
    return opened.store;
  };
}
