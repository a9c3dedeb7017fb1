/**
 * Groups (`groupConcurrency`, `groupRateLimit`, fair rotation, debounce) with real worker processes
 * on one SQLite file: a fresh temp file per test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";
import { describeGroupsSuite } from "../support/groups-suite.ts";

describeGroupsSuite({
  label: "sqlite",
  async fresh() {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-groups-"));
    const file = join(dir, "cairnq.db");
    return {
      fixtureArg: `sqlite:${file}`,
      client: CairnQ.sqlite(file),
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
});
