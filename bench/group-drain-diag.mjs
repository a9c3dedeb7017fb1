// Where a grouped c64 drain loses against the plain one: the pacing of the worker's claims (claims per
// task, empty and short claims, claim waits) and the cost of each claim (wall time inside claim(), round
// trips sent during it, the worker's CPU per task). Not part of the table: counts are robust on a loaded
// machine, times are not (compare the modes of one run, which take turns).
//
//   node bench/group-drain-diag.mjs [--backend sqlite|postgres|mysql] [--n 10000] [--warmup 2000] [--reps 1] [--modes plain,g10,g10k]
//
// The modes are the drains of the `groups` section (lib/groups.mjs): `plain` 10 groups without limits,
// `g10` 10 groups with groupConcurrency 8, `g10k` 10,000 groups with groupConcurrency 2; each on a fresh
// database filled through the client, drained by one worker process (concurrency 64, claimBatch 64, no
// prefetch) with lib/claim-pacing.mjs preloaded. Its counts cover the whole run, warm-up included.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { spawnWorker } from "./lib/child.mjs";
import { GROUP_DRAINS } from "./lib/groups.mjs";
import { fill } from "./lib/ours.mjs";

const { values: args } = parseArgs({
  options: {
    backend: { type: "string", default: "sqlite" },
    n: { type: "string", default: "10000" },
    warmup: { type: "string", default: "2000" },
    reps: { type: "string", default: "1" },
    modes: { type: "string", default: "plain,g10,g10k" },
  },
});
const BACKENDS = { sqlite: "./lib/sqlite-backend.mjs", postgres: "./lib/postgres-backend.mjs", mysql: "./lib/mysql-backend.mjs" };
if (!(args.backend in BACKENDS)) throw new Error(`--backend must be one of ${Object.keys(BACKENDS).join(", ")}, got ${args.backend}`);
const backend = Object.values(await import(BACKENDS[args.backend])).find((v) => typeof v?.fresh === "function");
const [g10, g10k] = GROUP_DRAINS;
const MODES = {
  plain: { groups: 10, taskOptions: undefined },
  g10: { groups: g10.groups, taskOptions: { groupConcurrency: g10.groupConcurrency } },
  g10k: { groups: g10k.groups, taskOptions: { groupConcurrency: g10k.groupConcurrency } },
};
const n = Number(args.n);
const warmup = Number(args.warmup);
const modes = args.modes.split(",");
for (const mode of modes) if (!(mode in MODES)) throw new Error(`unknown mode ${mode} (${Object.keys(MODES).join(", ")})`);
const PRELOAD = new URL("./lib/claim-pacing.mjs", import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), "cairnq-group-diag-"));

try {
  for (let rep = 0; rep < Number(args.reps); rep += 1) {
    for (const mode of rep % 2 === 0 ? modes : [...modes].reverse()) {
      const { groups, taskOptions } = MODES[mode];
      const { target, cleanup } = await backend.fresh(`group-diag-${mode}`);
      try {
        await fill(target, warmup + n, groups);
        const out = join(dir, `${mode}-${rep}.json`);
        process.env.CAIRNQ_CLAIM_PACING_OUT = out;
        const child = await spawnWorker({ target, worker: { concurrency: 64, claimBatch: 64 }, taskOptions, expect: warmup + n, warmup, preload: [PRELOAD] });
        let report;
        try {
          report = await child.run(Math.max(120_000, (warmup + n) * 60));
        } finally {
          await child.stop();
        }
        const c = JSON.parse(readFileSync(out, "utf8"));
        const hist = Object.entries(c.rowsHist).map(([k, v]) => `${k}:${v}`).join(" ");
        console.log(
          `${args.backend} ${mode} rep ${rep + 1}: ${Math.round(n / (report.ms / 1000))} tasks/s, worker CPU ${(report.cpuUs / n).toFixed(1)} µs/task; ` +
            `${c.claims} claims (${(c.rows / c.claims).toFixed(1)} rows each; rows ${hist}), ${(c.claimMs / c.claims).toFixed(2)} ms in claim() each, ` +
            `${(c.tripsInClaims / c.claims).toFixed(2)} round trips (SQLite: statements) during each; ${c.waits} claim waits, ${Math.round(c.waitMs)} ms`,
        );
      } finally {
        await cleanup();
      }
    }
  }
} finally {
  delete process.env.CAIRNQ_CLAIM_PACING_OUT;
  rmSync(dir, { recursive: true, force: true });
}
