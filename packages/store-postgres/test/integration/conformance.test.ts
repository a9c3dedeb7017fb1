import { runConformance } from "@cairnq/conformance/vitest";
import { PostgresStore } from "@cairnq/store-postgres";
import { KIT_CASE_TIMEOUT_MS, PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll } from "vitest";

// The whole behavioral suite, through the kit's public entry, exactly as a
// third-party store would run it: a fresh schema per case (the store creates
// it through the `schema` option), dropped afterwards.
const dsn = pgDsn();
const admin = new PgAdmin();
afterAll(() => admin.close());

runConformance({
  name: "PostgresStore",
  caseTimeoutMs: KIT_CASE_TIMEOUT_MS,
  capabilities: { pushWakeups: true, transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, durableSteps: true, queueHealth: true, groups: true },
  createStore: (ctx) => new PostgresStore(dsn, { schema: ctx.testId, max: 4 }),
  // A second store on the same schema, for the cases that race two instances.
  createPeerStore: (ctx) => new PostgresStore(dsn, { schema: ctx.testId, max: 2 }),
  destroyStore: async (store, ctx) => {
    await store.close();
    await admin.dropSchema(ctx.testId);
  },
});
