/**
 * The randomized durable-step programs on Postgres in real time
 * (`support/steps-fuzz-suite.ts`), each seed in a fresh schema. Fails,
 * never skips, without `CAIRNQ_TEST_PG_DSN`.
 */
import { afterAll } from "vitest";
import { PostgresStore } from "cairnq";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn } from "../support/postgres.ts";
import { describeStepsFuzz } from "../support/steps-fuzz-suite.ts";

describeStepsFuzz({
  label: "postgres",
  async fresh() {
    const schema = await freshSchemaName("cq_steps_fuzz");
    return { store: new PostgresStore(pgDsn(), { schema, max: 4 }), dispose: () => dropSchema(schema) };
  },
});

afterAll(closeAdmin);
