/**
 * Schedules and cross-process flow control (`globalConcurrency`, `rateLimit`) with real worker
 * processes on one Postgres database: a fresh schema per test, dropped
 * afterwards. Without `CAIRNQ_TEST_PG_DSN`, or when it does not answer, the
 * tests fail.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { describeScheduleFlowSuite } from "../support/schedule-flow-suite.ts";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn } from "../support/postgres.ts";

describeScheduleFlowSuite({
  label: "postgres",
  async fresh() {
    const schema = await freshSchemaName("cq_sched");
    return {
      fixtureArg: fixtureArg(schema),
      client: CairnQ.postgres(pgDsn(), { schema }),
      dispose: () => dropSchema(schema),
    };
  },
});

afterAll(closeAdmin);
