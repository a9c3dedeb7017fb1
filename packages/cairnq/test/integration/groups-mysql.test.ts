/**
 * Groups (`groupConcurrency`, `groupRateLimit`, fair rotation, debounce) with real worker processes
 * on one MariaDB/MySQL database: a fresh database per test, dropped afterwards. MySQL has no push
 * channel: the workers poll. `CAIRNQ_TEST_MYSQL_DSN` names the server; without it, or when it does
 * not answer, the tests fail.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { describeGroupsSuite } from "../support/groups-suite.ts";

const admin = new MySQLAdmin(mysqlDsn());
let databases = 0;

describeGroupsSuite({
  label: "mysql",
  async fresh() {
    const id = `groups_${++databases}`;
    const dsn = await admin.createDatabase(id);
    return {
      fixtureArg: `mysql:${dsn}`,
      client: CairnQ.mysql(dsn, { max: 4 }),
      dispose: () => admin.dropDatabase(id),
    };
  },
});

afterAll(() => admin.close());
