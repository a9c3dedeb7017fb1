/**
 * API, producers and workers as separate OS processes on one SQLite file,
 * since what the protocol promises across processes is only proven across
 * processes. A fresh temp file per test, so WAL and locking behave as in
 * production.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";
import { describeProcessSuite } from "../support/process-suite.ts";

describeProcessSuite({
  label: "sqlite",
  async fresh() {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-processes-"));
    const file = join(dir, "cairnq.db");
    return {
      fixtureArg: `sqlite:${file}`,
      client: CairnQ.sqlite(file),
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
  // The client's done waits read the task on each commit they notice (capabilities.taskDoneWakeReads).
  doneRows: true,
});
