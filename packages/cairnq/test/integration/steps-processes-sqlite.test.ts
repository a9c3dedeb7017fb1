/**
 * Durable steps across real processes on one SQLite file (the suite in
 * `support/steps-suite.ts`): random SIGKILLs, a SIGSTOP zombie, a restart of
 * every worker while tasks sleep, messages between processes.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";
import { describeStepsSuite } from "../support/steps-suite.ts";

describeStepsSuite({
  label: "sqlite",
  async fresh() {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-steps-db-"));
    const file = join(dir, "cairnq.db");
    return { fixtureArg: `sqlite:${file}`, client: CairnQ.sqlite(file), dispose: () => rm(dir, { recursive: true, force: true }) };
  },
});
