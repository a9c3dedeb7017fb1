/**
 * Groups (`groupConcurrency`, `groupRateLimit`, fair rotation, debounce) with real worker processes
 * on one Postgres database: a fresh schema per test, dropped afterwards. Without
 * `CAIRNQ_TEST_PG_DSN`, or when it does not answer, the tests fail.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { describeGroupsSuite } from "../support/groups-suite.ts";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn } from "../support/postgres.ts";

describeGroupsSuite({
  label: "postgres",
  async fresh() {
    const schema = await freshSchemaName("cq_groups");
    return {
      fixtureArg: fixtureArg(schema),
      client: CairnQ.postgres(pgDsn(), { schema }),
      dispose: () => dropSchema(schema),
    };
  },
});

afterAll(closeAdmin);
