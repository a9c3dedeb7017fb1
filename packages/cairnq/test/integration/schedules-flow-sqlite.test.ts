/**
 * Schedules and cross-process flow control (`globalConcurrency`, `rateLimit`) with real worker
 * processes on one SQLite file: a fresh temp file per test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";
import { describeScheduleFlowSuite } from "../support/schedule-flow-suite.ts";

describeScheduleFlowSuite({
  label: "sqlite",
  async fresh() {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-sched-"));
    const file = join(dir, "cairnq.db");
    return {
      fixtureArg: `sqlite:${file}`,
      client: CairnQ.sqlite(file),
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
});
