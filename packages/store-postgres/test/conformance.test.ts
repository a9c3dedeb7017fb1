import { runConformance } from "@cairnq/conformance/vitest";
import { PostgresStore } from "@cairnq/store-postgres";
import pg from "pg";

// The whole behavioral suite, through the kit's public entry, exactly as a
// third-party store would run it: a fresh schema per case (the store creates
// it through the `schema` option), dropped afterwards.
const dsn = process.env.CAIRNQ_TEST_PG_DSN;
if (dsn === undefined || dsn.trim() === "") {
  throw new Error(
    "CAIRNQ_TEST_PG_DSN is not set, so the Postgres conformance suite cannot run (it never skips). " +
      "Run it through the root `pnpm test` (it provides a Postgres), or set CAIRNQ_TEST_PG_DSN=postgres://user@host:5432/db",
  );
}

async function dropSchema(schema: string): Promise<void> {
  const admin = new pg.Client(dsn);
  admin.on("error", () => {});
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
}

runConformance({
  name: "PostgresStore",
  capabilities: { pushWakeups: true, transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true },
  createStore: (ctx) => new PostgresStore(dsn, { schema: ctx.testId, max: 4 }),
  destroyStore: async (store, ctx) => {
    await store.close();
    await dropSchema(ctx.testId);
  },
});
