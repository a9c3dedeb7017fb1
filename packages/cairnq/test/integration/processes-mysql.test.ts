/**
 * API, producers and workers as separate OS processes on one MariaDB
 * database: the suite the SQLite file and Postgres run (a drain by three
 * worker processes, a worker killed with SIGKILL mid-handler, a cancel that
 * crosses processes, `call()` across processes). MySQL has no push channel:
 * waits check for their change (MySQLWakeups).
 *
 * Each test gets a fresh database (migrations race among the processes that
 * connect to it first, as in production), dropped afterwards.
 * `CAIRNQ_TEST_MYSQL_DSN` names the server; without it the tests fail.
 */
import { afterAll } from "vitest";
import { CairnQ } from "cairnq";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { describeProcessSuite } from "../support/process-suite.ts";

const admin = new MySQLAdmin(mysqlDsn());
let databases = 0;

describeProcessSuite({
  label: "mysql",
  async fresh() {
    const id = `processes_${++databases}`;
    const dsn = await admin.createDatabase(id);
    return {
      fixtureArg: `mysql:${dsn}`,
      client: CairnQ.mysql(dsn, { max: 4 }),
      dispose: () => admin.dropDatabase(id),
    };
  },
});

afterAll(() => admin.close());
