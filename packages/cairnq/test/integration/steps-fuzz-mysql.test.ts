/**
 * The randomized durable-step programs on MariaDB/MySQL in real time
 * (`support/steps-fuzz-suite.ts`), each seed in a fresh database, dropped
 * afterwards. `CAIRNQ_TEST_MYSQL_DSN` names the server; without it, or when
 * it does not answer, the tests fail.
 */
import { afterAll } from "vitest";
import { MySQLStore } from "cairnq";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { describeStepsFuzz } from "../support/steps-fuzz-suite.ts";

const admin = new MySQLAdmin(mysqlDsn());
let databases = 0;

describeStepsFuzz({
  label: "mysql",
  async fresh() {
    const id = `steps_fuzz_${++databases}`;
    const dsn = await admin.createDatabase(id);
    return { store: new MySQLStore(dsn, { max: 4 }), dispose: () => admin.dropDatabase(id) };
  },
});

afterAll(() => admin.close());
