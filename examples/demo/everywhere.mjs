// The demo's test (`test:integration`): the demo under Node on SQLite (better-sqlite3), then under Bun
// on SQLite (bun:sqlite) and on Postgres (pg, in a fresh schema of CAIRNQ_TEST_PG_DSN). Bun comes from
// the npm registry through scripts/runtimes.mjs; a missing Bun or Postgres fails the test.
import { spawnSync } from "node:child_process";
import { ensureRuntime } from "../../scripts/runtimes.mjs";

const dsn = process.env.CAIRNQ_TEST_PG_DSN;
if (!dsn) throw new Error("CAIRNQ_TEST_PG_DSN is not set: the demo runs on Postgres under Bun too (pnpm test provides one; see docs/testing.md)");
const bun = ensureRuntime("bun");
const demo = new URL("./demo.mjs", import.meta.url).pathname;

const runs = [
  { label: "Node, SQLite", cmd: process.execPath, args: [demo], expect: /SQLite .* \(better-sqlite3\)/ },
  { label: `Bun ${bun.version}, SQLite`, cmd: bun.bin, args: [demo], expect: /Bun .*SQLite .* \(bun:sqlite\)/ },
  { label: `Bun ${bun.version}, Postgres`, cmd: bun.bin, args: [demo, dsn], expect: /Bun .*Postgres schema cairnq_demo_/ },
];
let failed = 0;
for (const { label, cmd, args, expect } of runs) {
  const ran = spawnSync(cmd, args, { encoding: "utf8", timeout: 60_000 });
  const succeeded = ran.stdout.match(/\.png: succeeded → \{/g) ?? [];
  const ok = ran.status === 0 && expect.test(ran.stdout) && succeeded.length === 3 && /^demo finished$/m.test(ran.stdout);
  console.log(`${ok ? "ok" : "FAILED"}: the demo on ${label}`);
  if (!ok) {
    failed += 1;
    console.log(`--- exit ${ran.status ?? ran.signal}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`);
  }
}
console.log(`${runs.length - failed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
