/**
 * API, producers and workers as separate OS processes on one Postgres
 * database, since what the protocol promises across processes is only
 * proven across processes: the suite the SQLite file runs, plus the `call()`
 * latency to an idle worker process (logged).
 *
 * Each test gets a fresh schema, created by whichever process connects first
 * through the `schema` option (so migrations race among the processes, as in
 * production) and dropped afterwards. `CAIRNQ_TEST_PG_DSN` names the
 * database; without it, or when it does not answer, the tests fail.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { describeProcessSuite } from "../support/process-suite.ts";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn } from "../support/postgres.ts";

describeProcessSuite({
  label: "postgres",
  measureCallLatency: true,
  doneRows: true,
  async fresh() {
    const schema = await freshSchemaName("cq_processes");
    return {
      fixtureArg: fixtureArg(schema),
      client: CairnQ.postgres(pgDsn(), { schema }),
      dispose: () => dropSchema(schema),
    };
  },
});

afterAll(closeAdmin);
