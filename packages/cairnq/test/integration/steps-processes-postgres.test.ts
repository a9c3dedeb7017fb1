/**
 * Durable steps across real processes on Postgres (the suite in
 * `support/steps-suite.ts`), each test in a fresh schema. Fails, never skips,
 * without `CAIRNQ_TEST_PG_DSN`.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn } from "../support/postgres.ts";
import { describeStepsSuite } from "../support/steps-suite.ts";

describeStepsSuite({
  label: "postgres",
  async fresh() {
    const schema = await freshSchemaName("cq_steps");
    return { fixtureArg: fixtureArg(schema), client: CairnQ.postgres(pgDsn(), { schema }), dispose: () => dropSchema(schema) };
  },
});

afterAll(closeAdmin);
